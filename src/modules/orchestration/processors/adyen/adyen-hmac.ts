import { createHmac, timingSafeEqual } from 'node:crypto';

/** The fields of an Adyen notification item that its HMAC signature covers. */
export interface SignedNotificationFields {
  pspReference?: string;
  originalReference?: string;
  merchantAccountCode?: string;
  merchantReference?: string;
  amount?: { value?: number; currency?: string };
  eventCode?: string;
  success?: string;
}

/** An HMAC key as the Customer Area shows it: hexadecimal, 32 to 64 bytes. */
export const HMAC_KEY_FORMAT = /^(?:[0-9A-Fa-f]{2}){32,64}$/;

/**
 * Adyen's signature of a standard notification item: HMAC-SHA256 keyed with the hex-decoded HMAC key,
 * over `pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success`
 * (absent fields as empty strings), in base64. Written here rather than taken from Adyen's Node library:
 * the library (33 MB) would serve this function only.
 */
export function adyenSignature(item: SignedNotificationFields, hexKey: string): string {
  const signed = [
    item.pspReference,
    item.originalReference,
    item.merchantAccountCode,
    item.merchantReference,
    item.amount?.value,
    item.amount?.currency,
    item.eventCode,
    item.success,
  ]
    .map((field) => (field === undefined || field === null ? '' : String(field)))
    .join(':');
  return createHmac('sha256', Buffer.from(hexKey, 'hex')).update(signed, 'utf8').digest('base64');
}

/** Whether `signature` is the item's signature under `hexKey` (constant-time; a malformed key never matches). */
export function verifyAdyenSignature(
  item: SignedNotificationFields,
  signature: unknown,
  hexKey: string,
): boolean {
  if (typeof signature !== 'string' || !HMAC_KEY_FORMAT.test(hexKey)) return false;
  const expected = Buffer.from(adyenSignature(item, hexKey), 'base64');
  const given = Buffer.from(signature, 'base64');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
