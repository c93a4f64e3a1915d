import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

/**
 * C2SP tlog-checkpoint bodies signed as C2SP signed-notes with Ed25519
 * (https://c2sp.org/tlog-checkpoint, https://c2sp.org/signed-note).
 */

const ED25519 = 0x01;
/** DER prefixes that make node:crypto keys of raw Ed25519 seeds and public keys (RFC 8410). */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export interface Checkpoint {
  origin: string;
  treeSize: number;
  rootHash: Buffer;
  /**
   * When it was signed, in seconds since the Unix epoch: its extension line `time <seconds>`. Checkpoints
   * signed before the line was added have none.
   */
  time?: number;
}

export interface NoteKey {
  name: string;
  publicKey: Buffer;
}

/** The body: origin, tree size and base64 root hash, one per line, then the `time` extension line. */
export const checkpointBody = (c: Checkpoint): string =>
  `${c.origin}\n${c.treeSize}\n${c.rootHash.toString('base64')}\n` +
  (c.time === undefined ? '' : `time ${c.time}\n`);

/** The `time` extension line's value for a moment: whole seconds since the Unix epoch. */
export const checkpointTime = (at: Date): number => Math.floor(at.getTime() / 1000);

/** The key hash: the first 4 bytes of SHA-256(name || "\n" || 0x01 || public key). */
export function keyHash(name: string, publicKey: Buffer): Buffer {
  return createHash('sha256')
    .update(name, 'utf8')
    .update(Buffer.from([0x0a, ED25519]))
    .update(publicKey)
    .digest()
    .subarray(0, 4);
}

export const keyId = (key: NoteKey): string => keyHash(key.name, key.publicKey).toString('hex');

/** `<name>+<key hash in hex>+<base64(0x01 || public key)>`. */
export const verifierKey = (key: NoteKey): string =>
  `${key.name}+${keyId(key)}+${Buffer.concat([Buffer.from([ED25519]), key.publicKey]).toString('base64')}`;

export const privateKeyOf = (seed: Buffer): KeyObject =>
  createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });

export const publicKeyOf = (seed: Buffer): Buffer =>
  Buffer.from(createPublicKey(privateKeyOf(seed)).export({ format: 'der', type: 'spki' })).subarray(
    SPKI_PREFIX.length,
  );

/** The signed note: the text, a blank line, and the signature line. */
export function signNote(text: string, name: string, seed: Buffer): string {
  const signature = sign(null, Buffer.from(text, 'utf8'), privateKeyOf(seed));
  const blob = Buffer.concat([keyHash(name, publicKeyOf(seed)), signature]).toString('base64');
  return `${text}\n\u2014 ${name} ${blob}\n`;
}

/** Splits a signed note into its text and signature lines; undefined when it is not one. */
export function parseNote(
  note: string,
): { text: string; signatures: { name: string; blob: Buffer }[] } | undefined {
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n')) return undefined;
  const text = note.slice(0, split + 1);
  const signatures: { name: string; blob: Buffer }[] = [];
  for (const line of note.slice(split + 2, -1).split('\n')) {
    const match = /^\u2014 (\S+) ([A-Za-z0-9+/]+={0,2})$/.exec(line);
    if (!match) return undefined;
    signatures.push({ name: match[1], blob: Buffer.from(match[2], 'base64') });
  }
  return signatures.length ? { text, signatures } : undefined;
}

/** Whether `key` signed the note. */
export function noteSignedBy(note: string, key: NoteKey): boolean {
  const parsed = parseNote(note);
  if (!parsed) return false;
  const hash = keyHash(key.name, key.publicKey);
  const publicKey = createPublicKey({
    key: Buffer.concat([SPKI_PREFIX, key.publicKey]),
    format: 'der',
    type: 'spki',
  });
  return parsed.signatures.some(
    (s) =>
      s.name === key.name &&
      s.blob.length === 68 &&
      s.blob.subarray(0, 4).equals(hash) &&
      verify(null, Buffer.from(parsed.text, 'utf8'), publicKey, s.blob.subarray(4)),
  );
}

/**
 * A checkpoint body's fields; undefined when it is not one. Extension lines must be non-empty (C2SP
 * tlog-checkpoint); other parties' are ignored, but a `time` line must be this service's: one of them,
 * `time` and a decimal number of seconds.
 */
export function parseCheckpoint(text: string): Checkpoint | undefined {
  const lines = text.split('\n');
  if (lines.length < 4 || lines[lines.length - 1] !== '' || !lines[0]) return undefined;
  if (!/^(0|[1-9]\d*)$/.test(lines[1])) return undefined;
  const rootHash = Buffer.from(lines[2], 'base64');
  if (rootHash.length !== 32 || rootHash.toString('base64') !== lines[2]) return undefined;
  const extensions = lines.slice(3, -1);
  if (extensions.some((line) => line === '')) return undefined;
  const times = extensions.filter((line) => /^time( |$)/.test(line));
  const time = times.length === 1 ? /^time (0|[1-9]\d{0,14})$/.exec(times[0]) : null;
  if (times.length && !time) return undefined;
  return {
    origin: lines[0],
    treeSize: Number(lines[1]),
    rootHash,
    ...(time ? { time: Number(time[1]) } : {}),
  };
}
