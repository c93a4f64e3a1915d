import { createHmac, timingSafeEqual } from 'node:crypto';

/** Whether `signature` is the lowercase hex HMAC-SHA256 of `raw` under `secret`, compared in constant time. */
export function checkoutSignatureValid(raw: Buffer, signature: unknown, secret: string): boolean {
  if (!secret || typeof signature !== 'string' || !/^[0-9a-f]{64}$/.test(signature)) return false;
  const expected = createHmac('sha256', secret).update(raw).digest();
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}
