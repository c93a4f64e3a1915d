import { request } from 'undici';
import { neverSent, ProcessorUnavailable, ProcessorUnreachable } from '../processor-calls';
import type { Credentials } from '../processor.port';

/** Braintree's GraphQL endpoints: sandbox (the `test` environment) and production (`live`). */
export const BRAINTREE_SANDBOX_URL = 'https://payments.sandbox.braintree-api.com/graphql';
export const BRAINTREE_PRODUCTION_URL = 'https://payments.braintree-api.com/graphql';

/** The API version the adapter speaks (Braintree requires 2019-01-01 or later). */
export const BRAINTREE_VERSION = '2019-01-01';

/** How long one call to Braintree may take before its outcome counts as unknown (left to settlement). */
export const BRAINTREE_TIMEOUT_MS = 12_000;

/**
 * A refusal Braintree stated: an HTTP 4xx other than 429 (401 and 403 are the credentials), or a GraphQL
 * error of a class that means the request was looked at and refused (`AUTHENTICATION`, `AUTHORIZATION`,
 * `VALIDATION`, `NOT_FOUND`, `UNSUPPORTED_CLIENT`). Only the class and Braintree's numeric legacy code are
 * kept: never its message, which may quote what was sent.
 */
export interface BraintreeRefusal {
  ok: false;
  status: number;
  errorClass: string;
  legacyCode: string | null;
}

export type BraintreeAnswer<T> = { ok: true; data: T } | BraintreeRefusal;

/** Error classes that say Braintree did not act: the same as no answer at all (left to settlement). */
const UNKNOWN_CLASSES = new Set(['INTERNAL', 'SERVICE_AVAILABILITY', 'UNKNOWN']);

/** Where a connection's calls go: VENDOR_BASE_URLS (`<base>/graphql`) when set, else Braintree's own. */
export function braintreeUrl(override: string | undefined, environment: 'test' | 'live'): string {
  if (override) return `${override}/graphql`;
  return environment === 'live' ? BRAINTREE_PRODUCTION_URL : BRAINTREE_SANDBOX_URL;
}

/** `Authorization: Basic base64(public_key:private_key)`. */
export function basicAuthorization(credentials: Credentials): string {
  const pair = `${credentials.public_key ?? ''}:${credentials.private_key ?? ''}`;
  return `Basic ${Buffer.from(pair, 'utf8').toString('base64')}`;
}

interface GraphqlError {
  extensions?: { errorClass?: unknown; legacyCode?: unknown };
}

const legacyCodeOf = (error: GraphqlError | undefined): string | null => {
  const code = error?.extensions?.legacyCode;
  return typeof code === 'string' && /^[0-9]{1,6}$/.test(code) ? code : null;
};

/**
 * One GraphQL request (`POST /graphql`, JSON `{query, variables}`) with the connection's keys. A 2xx
 * without errors is Braintree's answer; a refusal (see BraintreeRefusal) is returned; no connection at
 * all, a 429 or a `RESOURCE_LIMIT` error (nothing was done) is ProcessorUnreachable; anything else (no
 * answer in time, a dropped connection, a 5xx, an internal error: Braintree may or may not have acted)
 * is ProcessorUnavailable. `operation` names the call in errors; nothing sent or received is logged,
 * and errors carry no part of the request.
 */
export async function braintreeCall<T>(
  url: string,
  credentials: Credentials,
  operation: string,
  query: string,
  variables: Record<string, unknown>,
  timeoutMs: number,
): Promise<BraintreeAnswer<T>> {
  let status: number;
  let text: string;
  try {
    const response = await request(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        authorization: basicAuthorization(credentials),
        'braintree-version': BRAINTREE_VERSION,
      },
      body: JSON.stringify({ query, variables }),
      signal: AbortSignal.timeout(Math.max(1, timeoutMs)),
    });
    status = response.statusCode;
    text = await response.body.text();
  } catch (error) {
    if (neverSent(error)) throw new ProcessorUnreachable(`Braintree could not be reached for ${operation}`);
    throw new ProcessorUnavailable(`Braintree did not answer ${operation}`);
  }
  if (status === 429) throw new ProcessorUnreachable(`Braintree answered 429 to ${operation}`);
  if (status >= 500) throw new ProcessorUnavailable(`Braintree answered ${status} to ${operation}`);
  let parsed: { data?: T | null; errors?: GraphqlError[] } = {};
  try {
    parsed = text ? (JSON.parse(text) as typeof parsed) : {};
  } catch {
    parsed = {};
  }
  const first = Array.isArray(parsed.errors) ? parsed.errors[0] : undefined;
  const errorClass = typeof first?.extensions?.errorClass === 'string' ? first.extensions.errorClass : null;
  if (status >= 400)
    return {
      ok: false,
      status,
      errorClass:
        errorClass ?? (status === 401 ? 'AUTHENTICATION' : status === 403 ? 'AUTHORIZATION' : 'HTTP'),
      legacyCode: legacyCodeOf(first),
    };
  if (errorClass === 'RESOURCE_LIMIT') throw new ProcessorUnreachable(`Braintree limited ${operation}`);
  if (first !== undefined) {
    if (!errorClass || UNKNOWN_CLASSES.has(errorClass))
      throw new ProcessorUnavailable(`Braintree failed ${operation} (${errorClass ?? 'no class'})`);
    return { ok: false, status, errorClass, legacyCode: legacyCodeOf(first) };
  }
  if (parsed.data === undefined || parsed.data === null)
    throw new ProcessorUnavailable(`Braintree answered ${operation} without data`);
  return { ok: true, data: parsed.data };
}

/** A refusal as our `error_code`: `braintree_<class>` (and its legacy code), never Braintree's message. */
export function refusalCode(refusal: BraintreeRefusal): string {
  const base = `braintree_${refusal.errorClass.toLowerCase().replace(/[^a-z_]/g, '')}`;
  return refusal.legacyCode ? `${base}_${refusal.legacyCode}` : base;
}
