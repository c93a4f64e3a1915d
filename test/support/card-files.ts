import { createReadStream, createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as openpgp from 'openpgp';

/**
 * Card files for import tests (docs/migration.md): Luhn-valid numbers made from an index, and files
 * encrypted with openpgp to an import key, in memory (small files) or as streams (large ones).
 */

/** The Luhn check digit of a number's body. */
function checkDigit(body: string): number {
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    let d = body.charCodeAt(body.length - 1 - i) - 48;
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return (10 - (sum % 10)) % 10;
}

/** The `i`th 16-digit Visa-like number of a series (`prefix`: 5 digits), Luhn-valid. */
export function cardNumber(i: number, prefix = '41111'): string {
  const body = `${prefix}${String(i).padStart(10, '0')}`;
  return `${body}${checkDigit(body)}`;
}

/** The same number with its last digit changed: it fails the Luhn check. */
export const badLuhn = (number: string): string =>
  `${number.slice(0, -1)}${(Number(number.slice(-1)) + 1) % 10}`;

/** A file's bytes encrypted to `publicKey` (armored key), with `filename` inside; armored on request. */
export async function encryptTo(
  publicKey: string,
  content: string | Buffer,
  filename: string,
  armor = false,
): Promise<Buffer> {
  const key = await openpgp.readKey({ armoredKey: publicKey });
  const message = await openpgp.createMessage({
    binary: typeof content === 'string' ? Buffer.from(content) : content,
    filename,
    format: 'binary',
  });
  if (armor) return Buffer.from(await openpgp.encrypt({ message, encryptionKeys: key, format: 'armored' }));
  return Buffer.from(await openpgp.encrypt({ message, encryptionKeys: key, format: 'binary' }));
}

/** Encrypts the file `from` to `publicKey` into `to`, streamed both ways (never held whole in memory). */
export async function encryptFileTo(
  publicKey: string,
  from: string,
  to: string,
  filename: string,
): Promise<void> {
  const key = await openpgp.readKey({ armoredKey: publicKey });
  const message = await openpgp.createMessage({
    binary: Readable.toWeb(createReadStream(from)) as unknown as openpgp.WebStream<Uint8Array>,
    filename,
    format: 'binary',
  });
  const encrypted = await openpgp.encrypt({ message, encryptionKeys: key, format: 'binary' });
  await pipeline(Readable.fromWeb(encrypted as never), createWriteStream(to));
}

/**
 * The digits a result shows besides its line and token id: a test gives external ids without digits, so
 * any digit here would come from the file's card numbers (or another of its values).
 */
export function digitsShown(result: Record<string, unknown>): string {
  const { line: _line, token_id: _token, ...rest } = result;
  return (JSON.stringify(rest).match(/\d/g) ?? []).join('');
}
