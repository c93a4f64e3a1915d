/** What the bench scripts share: the built service's environment and JSON calls to its API. */
import { randomBytes } from 'node:crypto';

/** The environment the built service runs under in a benchmark (production mode, rate limit out of the way). */
export function serviceEnv(databaseUrl: string, port: number): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    BOOTSTRAP: 'true',
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
    RATE_LIMIT_PER_MINUTE: '100000000',
    ENCRYPTION_KEYS: `v1:${randomBytes(32).toString('base64')}`,
  };
}

/** A JSON call with an API key; anything but a 2xx throws with the answer. */
export async function api(
  base: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- set-up calls read a few fields of JSON answers
): Promise<any> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'BT-API-KEY': key, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}
