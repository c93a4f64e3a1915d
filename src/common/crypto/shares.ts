import { createHash, timingSafeEqual } from 'node:crypto';

/** The first field of a share line: the format's name and version. */
export const SHARE_PREFIX = 'vault-share-v1';

/**
 * One custodian's share of a split key-encrypting key, as the ceremony prints it and `vault unseal` sends
 * it back: one line of printable ASCII,
 *
 *   vault-share-v1:<KEK version>:<check label>:<index>:<base64 payload>:<digest>
 *
 * The check label is the first 8 bytes (hex) of the KEK's check value, so that a share of another KEK is
 * refused by name before it counts; the index tells custodians apart (1 to N); the payload is the share
 * itself (Shamir over GF(256): the key's length plus one byte, its x coordinate); the digest (8 hex of
 * SHA-256 over the rest of the line) catches a line damaged in transit. The digest is no secret and no
 * signature: a forged share that passes it is caught when the shares are combined (the check value).
 */
export interface Share {
  version: string;
  check: string;
  index: number;
  payload: Buffer;
}

/** Why a line is not a share this vault can count. */
export type ShareFault = 'corrupted';

const digestOf = (body: string): string => createHash('sha256').update(body).digest('hex').slice(0, 8);

/** The label of a check value printed on each share. */
export const checkLabel = (checkValue: Buffer): string => checkValue.subarray(0, 8).toString('hex');

export function shareLine(share: Share): string {
  const body = [SHARE_PREFIX, share.version, share.check, share.index, share.payload.toString('base64')].join(
    ':',
  );
  return `${body}:${digestOf(body)}`;
}

/** Parses a share line (surrounding white space ignored); `corrupted` for anything else. */
export function parseShare(line: string): Share | ShareFault {
  const fields = line.trim().split(':');
  if (fields.length !== 6 || fields[0] !== SHARE_PREFIX) return 'corrupted';
  const [, version, check, index, payload, digest] = fields;
  if (!/^v\d{1,6}$/.test(version) || !/^[0-9a-f]{16}$/.test(check) || !/^([1-9]|1[0-6])$/.test(index))
    return 'corrupted';
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(payload) || !/^[0-9a-f]{8}$/.test(digest)) return 'corrupted';
  const expected = Buffer.from(digestOf(fields.slice(0, 5).join(':')));
  if (!timingSafeEqual(expected, Buffer.from(digest))) return 'corrupted';
  const bytes = Buffer.from(payload, 'base64');
  // A 256-bit key's share: 32 bytes and its x coordinate, which is never 0.
  if (bytes.length !== 33 || bytes[32] === 0) return 'corrupted';
  return { version, check, index: Number(index), payload: bytes };
}
