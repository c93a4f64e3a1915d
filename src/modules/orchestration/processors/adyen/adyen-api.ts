import { request } from 'undici';
import { neverSent, ProcessorUnavailable, ProcessorUnreachable } from '../processor-calls';
import type { Credentials } from '../processor.port';

/** How long one call to Adyen may take before its outcome counts as unknown (left to settlement). */
export const ADYEN_TIMEOUT_MS = 20_000;

/** Adyen's Checkout API v71 in its test environment. */
export const ADYEN_TEST_BASE_URL = 'https://checkout-test.adyen.com/v71';

/** A live endpoint prefix: letters, digits and dashes only, so that it can only name an Adyen host. */
export const LIVE_PREFIX = /^[A-Za-z0-9-]{1,100}$/;

/** Adyen's error body (`ServiceError`). */
export interface AdyenServiceError {
  status?: number;
  errorCode?: string;
  errorType?: string;
  message?: string;
}

/** An answer Adyen gave: a 2xx with its body, or a 4xx with its ServiceError. */
export type AdyenAnswer<T> = { ok: true; body: T } | { ok: false; status: number; error: AdyenServiceError };

/** Where a connection's calls go: VENDOR_BASE_URLS when set, else Adyen's test or live endpoint. */
export function adyenBaseUrl(
  override: string | undefined,
  environment: 'test' | 'live',
  credentials: Credentials,
): string {
  if (override) return override;
  if (environment === 'test') return ADYEN_TEST_BASE_URL;
  const prefix = credentials.live_endpoint_url_prefix ?? '';
  if (!LIVE_PREFIX.test(prefix))
    throw new AdyenConfigurationError(
      'a live adyen-card connection needs live_endpoint_url_prefix (letters, digits and dashes, from the Customer Area)',
    );
  return `https://${prefix}-checkout-live.adyenpayments.com/checkout/v71`;
}

/** A connection that cannot be called as configured (no live prefix): a failure, never a retry. */
export class AdyenConfigurationError extends Error {}

/**
 * One JSON POST to Adyen's Checkout API with the merchant's API key (`X-API-Key`) and, when given, an
 * `Idempotency-Key`. A 2xx or a 4xx other than 429 is Adyen's answer; no connection at all or a 429
 * (nothing was done) is ProcessorUnreachable; anything else (no answer in time, a dropped connection, a
 * 5xx: Adyen may or may not have acted) is ProcessorUnavailable, so that the operation is left to
 * settlement rather than counted as failed. Nothing sent or received
 * is logged here, and errors carry no part of the request.
 */
export async function adyenPost<T>(
  baseUrl: string,
  credentials: Credentials,
  path: string,
  body: Record<string, unknown>,
  options: { idempotencyKey?: string; timeoutMs: number },
): Promise<AdyenAnswer<T>> {
  let status: number;
  let text: string;
  try {
    const response = await request(`${baseUrl}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        'x-api-key': credentials.api_key ?? '',
        ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    status = response.statusCode;
    text = await response.body.text();
  } catch (error) {
    const where = path.replace(/\/payments\/[^/]+/, '/payments/…');
    // The connection was never opened: Adyen cannot have acted.
    if (neverSent(error)) throw new ProcessorUnreachable(`Adyen could not be reached for ${where}`);
    throw new ProcessorUnavailable(`Adyen did not answer ${where}`);
  }
  // A 429 is refused unprocessed; a 5xx may or may not have been acted on.
  if (status === 429) throw new ProcessorUnreachable('Adyen answered 429');
  if (status >= 500) throw new ProcessorUnavailable(`Adyen answered ${status}`);
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = {};
  }
  if (status >= 200 && status < 300) return { ok: true, body: parsed as T };
  return { ok: false, status, error: parsed ?? {} };
}
