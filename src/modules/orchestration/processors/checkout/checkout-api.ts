import { request } from 'undici';
import { neverSent, ProcessorUnavailable, ProcessorUnreachable } from '../processor-calls';
import type { Credentials } from '../processor.port';

/** How long one call to Checkout.com may take before its outcome counts as unknown (left to settlement). */
export const CHECKOUT_TIMEOUT_MS = 20_000;

/** Checkout.com's sandbox (test accounts) and production API. */
export const CHECKOUT_TEST_BASE_URL = 'https://api.sandbox.checkout.com';
export const CHECKOUT_LIVE_BASE_URL = 'https://api.checkout.com';

/** Checkout.com's error body (`ValidationError`): `request_invalid` and its `error_codes`. */
export interface CheckoutError {
  request_id?: string;
  error_type?: string;
  error_codes?: string[];
}

/** An answer Checkout.com gave: a 2xx with its status and body, or a 4xx with its error body. */
export type CheckoutAnswer<T> =
  { ok: true; status: number; body: T } | { ok: false; status: number; error: CheckoutError };

/** Checkout.com answered 5xx: it may or may not have acted (an unknown outcome, as a time-out is). */
export class ProcessorAnswered5xx extends ProcessorUnavailable {
  constructor(status: number) {
    super(`Checkout.com answered ${status}`);
    this.name = 'ProcessorAnswered5xx';
  }
}

/** Where a connection's calls go: VENDOR_BASE_URLS when set, else Checkout.com's sandbox or production. */
export function checkoutBaseUrl(override: string | undefined, environment: 'test' | 'live'): string {
  if (override) return override;
  return environment === 'test' ? CHECKOUT_TEST_BASE_URL : CHECKOUT_LIVE_BASE_URL;
}

/** A path as it may be named in a message: the payment id left out. */
const described = (path: string): string => path.replace(/\/payments\/[^/]+/, '/payments/…');

/**
 * One call to Checkout.com's API with the connection's secret key (`Authorization: Bearer`) and, for a
 * POST that moves money, a `Cko-Idempotency-Key`. A 2xx or a 4xx other than 429 is Checkout.com's answer;
 * no connection at all or a 429 (nothing was done) is ProcessorUnreachable; anything else (no answer in
 * time, a dropped connection, a 5xx: Checkout.com may or may not have acted) is ProcessorUnavailable, so
 * that the operation is left to settlement rather than counted as failed. Nothing sent or received is
 * logged here, and errors carry no part of the request.
 */
export async function checkoutCall<T>(
  baseUrl: string,
  credentials: Credentials,
  method: 'GET' | 'POST',
  path: string,
  options: { body?: Record<string, unknown>; idempotencyKey?: string; timeoutMs: number },
): Promise<CheckoutAnswer<T>> {
  let status: number;
  let text: string;
  try {
    const response = await request(`${baseUrl}${path}`, {
      method,
      headers: {
        accept: 'application/json',
        authorization: `Bearer ${credentials.secret_key ?? ''}`,
        ...(options.body ? { 'content-type': 'application/json' } : {}),
        ...(options.idempotencyKey ? { 'cko-idempotency-key': options.idempotencyKey } : {}),
      },
      ...(options.body ? { body: JSON.stringify(options.body) } : {}),
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    status = response.statusCode;
    text = await response.body.text();
  } catch (error) {
    // The connection was never opened: Checkout.com cannot have acted.
    if (neverSent(error))
      throw new ProcessorUnreachable(`Checkout.com could not be reached for ${described(path)}`);
    throw new ProcessorUnavailable(`Checkout.com did not answer ${method} ${described(path)}`);
  }
  // A 429 is refused unprocessed; a 5xx may or may not have been acted on.
  if (status === 429) throw new ProcessorUnreachable('Checkout.com answered 429');
  if (status >= 500) throw new ProcessorAnswered5xx(status);
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = {};
  }
  if (status >= 200 && status < 300) return { ok: true, status, body: parsed as T };
  return { ok: false, status, error: parsed ?? {} };
}
