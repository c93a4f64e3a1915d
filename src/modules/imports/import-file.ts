import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { type FileHandle, open, rm } from 'node:fs/promises';
import { type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ReadableStream } from 'node:stream/web';
import * as openpgp from 'openpgp';
import { MAX_LINE_BYTES } from './card-lines';

/**
 * The encrypted file of an import on disk, and its plaintext as a stream of lines: the upload goes to a
 * file as it arrives, and is decrypted as a stream each time it is read (openpgp's streaming API), so that
 * neither the file nor its plaintext is ever held whole in memory; the plaintext never touches the disk.
 */

/** An upload is at most 2 GiB. */
export const MAX_UPLOAD_BYTES = 2 * 1024 ** 3;

export class UploadTooLarge extends Error {}
export class NotAMessage extends Error {}
export class NotForThisKey extends Error {}

/**
 * Streams `body` into `path`, refusing (and removing the file) past `limit` bytes; answers the size and
 * the SHA-256 of the bytes (hex: what an idempotency key is claimed with).
 */
export async function saveUpload(
  body: Readable,
  path: string,
  limit = MAX_UPLOAD_BYTES,
): Promise<{ size: number; sha256: string }> {
  let size = 0;
  const digest = createHash('sha256');
  const count = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      digest.update(chunk);
      done(size > limit ? new UploadTooLarge() : null, chunk);
    },
  });
  try {
    await pipeline(body, count, createWriteStream(path, { mode: 0o600 }));
    return { size, sha256: digest.digest('hex') };
  } catch (error) {
    await rm(path, { force: true });
    body.resume();
    throw error;
  }
}

/** An armored message starts with its armor header line (after blank space); a binary one with a packet tag. */
async function isArmored(path: string): Promise<boolean> {
  const file = await open(path, 'r');
  try {
    const { buffer, bytesRead } = await file.read(Buffer.alloc(64), 0, 64, 0);
    return buffer.subarray(0, bytesRead).toString('latin1').trimStart().startsWith('-----BEGIN PGP');
  } finally {
    await file.close();
  }
}

/**
 * The file's bytes as a web stream, read as they are pulled (64 KiB at a time, a few chunks ahead);
 * cancelled, it closes the file. (`Readable.toWeb` over a file stream goes on pushing after a cancel,
 * which throws out of the event loop.)
 */
function fileStream(path: string): ReadableStream<Uint8Array> {
  let handle: FileHandle | undefined;
  const close = async () => {
    const h = handle;
    handle = undefined;
    await h?.close();
  };
  return new ReadableStream<Uint8Array>(
    {
      start: async () => {
        handle = await open(path, 'r');
      },
      pull: async (controller) => {
        if (!handle) return;
        const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
        try {
          const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, null);
          if (bytesRead === 0) {
            await close();
            controller.close();
          } else controller.enqueue(new Uint8Array(buffer.buffer, buffer.byteOffset, bytesRead));
        } catch (error) {
          await close().catch(() => undefined);
          controller.error(error);
        }
      },
      cancel: close,
    },
    { highWaterMark: 4 },
  );
}

const CHUNK_BYTES = 64 * 1024;

/**
 * openpgp's functions over streams, typed here: its typings name its stream types from a package it does
 * not install (`@openpgp/web-stream-tools`), which leaves them unresolved.
 */
type StreamedMessage = openpgp.Message<Uint8Array>;
const readMessage = openpgp.readMessage as unknown as (options: {
  armoredMessage?: ReadableStream<string>;
  binaryMessage?: ReadableStream<Uint8Array>;
}) => Promise<StreamedMessage>;
const decrypt = openpgp.decrypt as unknown as (options: {
  message: StreamedMessage;
  decryptionKeys: openpgp.PrivateKey;
  format: 'binary';
  config: Partial<openpgp.Config>;
}) => Promise<{ data: ReadableStream<Uint8Array>; filename?: string }>;

/** The message in the file, read as a stream. */
async function readFileMessage(path: string): Promise<StreamedMessage> {
  const bytes = fileStream(path);
  try {
    if (await isArmored(path))
      return await readMessage({ armoredMessage: bytes.pipeThrough(new TextDecoderStream('latin1')) });
    return await readMessage({ binaryMessage: bytes });
  } catch {
    throw new NotAMessage();
  }
}

export interface Decrypted {
  /** The literal data's file name, as the sender named it (`cards.csv`). */
  filename: string;
  /** The plaintext; its integrity is checked as its end is read (an error then). */
  data: ReadableStream<Uint8Array>;
}

/**
 * Decrypts the file with `key` as a stream. A message for other keys only throws `NotForThisKey` (a
 * wildcard recipient is tried, and then fails the same way); anything that is not an OpenPGP message,
 * `NotAMessage`.
 */
export async function decryptFile(path: string, key: openpgp.PrivateKey): Promise<Decrypted> {
  const message = await readFileMessage(path);
  const mine = new Set(key.getKeyIDs().map((id) => id.toHex()));
  const recipients = message.getEncryptionKeyIDs().map((id) => id.toHex());
  if (!recipients.length) throw new NotAMessage();
  if (!recipients.some((id) => mine.has(id) || /^0+$/.test(id))) throw new NotForThisKey();
  try {
    const { data, filename } = await decrypt({
      message,
      decryptionKeys: key,
      format: 'binary',
      // Released before the end's integrity check (else buffered whole): a job reads the file through
      // once to check it before it creates anything from it.
      config: { allowUnauthenticatedStream: true },
    });
    return { filename: filename ?? '', data };
  } catch {
    throw new NotForThisKey();
  }
}

/** One line of the plaintext, without its end (`\n` or `\r\n`); `tooLong` when cut at MAX_LINE_BYTES. */
export interface RawLine {
  line: number;
  bytes: Buffer;
  tooLong: boolean;
}

/** The plaintext's lines in order, 1-based, blank ones included; memory bounded by MAX_LINE_BYTES. */
export async function* linesOf(data: ReadableStream<Uint8Array>): AsyncGenerator<RawLine> {
  let line = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let tooLong = false;
  const end = (tail: Buffer): RawLine => {
    let bytes = pending.length ? Buffer.concat([...pending, tail]) : tail;
    if (bytes.length && bytes[bytes.length - 1] === 13) bytes = bytes.subarray(0, bytes.length - 1);
    const out = { line: ++line, bytes: tooLong ? Buffer.alloc(0) : bytes, tooLong };
    pending = [];
    pendingBytes = 0;
    tooLong = false;
    return out;
  };
  for await (const chunk of data) {
    const buffer = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let from = 0;
    for (let nl = buffer.indexOf(10, from); nl >= 0; nl = buffer.indexOf(10, from)) {
      const piece = buffer.subarray(from, nl);
      if (pendingBytes + piece.length > MAX_LINE_BYTES) tooLong = true;
      yield end(tooLong ? Buffer.alloc(0) : Buffer.from(piece));
      from = nl + 1;
    }
    const rest = buffer.subarray(from);
    if (rest.length && !tooLong) {
      pendingBytes += rest.length;
      if (pendingBytes > MAX_LINE_BYTES) {
        tooLong = true;
        pending = [];
      } else pending.push(Buffer.from(rest));
    }
  }
  if (pending.length || tooLong) yield end(Buffer.alloc(0));
}

/** Removes a file, if it is there. */
export const removeFile = (path: string): Promise<void> => rm(path, { force: true });
