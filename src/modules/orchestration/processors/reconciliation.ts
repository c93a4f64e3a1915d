import { BASE62 } from '../../../common/auth/api-key';

/**
 * The transaction uuid's 128 bits as an unsigned integer in base62 (`0-9A-Za-z`), without padding: a
 * shorter id that vendors accept as a merchant reference. base-x keeps leading zero bytes as leading
 * `0` digits, so they are dropped first to get the integer's own digits.
 */
export function toReconciliationId(uuid: string): string {
  const bytes = Buffer.from(uuid.replace(/-/g, ''), 'hex');
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  return BASE62.encode(bytes.subarray(start));
}

export function fromReconciliationId(id: string): string {
  const bytes = Buffer.from(BASE62.decode(id));
  if (bytes.length > 16) throw new Error('not a reconciliation id');
  const hex = Buffer.concat([Buffer.alloc(16 - bytes.length), bytes]).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
