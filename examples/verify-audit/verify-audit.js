#!/usr/bin/env node
// @ts-check
'use strict';

/**
 * Checks a tenant's audit log against the service's signed checkpoints, using Node's standard library only,
 * so that an auditor can read every line of what they run. See README.md next to this file and
 * docs/audit-verification.md.
 *
 * Standards:
 * - RFC 8785 (JSON Canonicalization Scheme): the bytes of a leaf.
 * - RFC 9162 section 2.1: the Merkle tree, inclusion proofs (2.1.3) and consistency proofs (2.1.4).
 * - C2SP tlog-checkpoint (https://c2sp.org/tlog-checkpoint) signed as a C2SP signed note
 *   (https://c2sp.org/signed-note) with Ed25519.
 *
 * Usage: node verify-audit.js --url http://localhost:3000 --key KEY [--checkpoint saved-note.txt]
 *          [--verifier-key VKEY] [--limit 100]
 */

const crypto = require('node:crypto');
const fs = require('node:fs');
const { parseArgs } = require('node:util');

// ---------------------------------------------------------------------------------------------------------
// RFC 8785 canonical JSON
// ---------------------------------------------------------------------------------------------------------

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A string as RFC 8785 writes it (as ECMAScript's JSON.stringify does); I-JSON has no lone surrogates. */
function canonicalString(/** @type {string} */ s) {
  if (LONE_SURROGATE.test(s)) throw new TypeError('canonicalJson: a string holds a lone surrogate');
  return JSON.stringify(s);
}

/**
 * The RFC 8785 canonical form of a JSON value: members sorted by their names' UTF-16 code units, no
 * whitespace, numbers and strings serialized as ECMAScript does. Throws on what JSON cannot hold.
 * @param {unknown} value
 * @returns {string}
 */
function canonicalJson(value) {
  if (value === null || typeof value === 'boolean') return String(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('canonicalJson: NaN and the infinities are not JSON');
    return JSON.stringify(value); // ECMAScript Number::toString; -0 is written 0
  }
  if (typeof value === 'string') return canonicalString(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object') {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null)
      throw new TypeError('canonicalJson: not a plain object');
    const record = /** @type {Record<string, unknown>} */ (value);
    // Array.prototype.sort compares strings by UTF-16 code units, which is RFC 8785's order.
    const members = Object.keys(record)
      .sort()
      .map((name) => `${canonicalString(name)}:${canonicalJson(record[name])}`);
    return `{${members.join(',')}}`;
  }
  throw new TypeError(`canonicalJson: a ${typeof value} is not JSON`);
}

// ---------------------------------------------------------------------------------------------------------
// RFC 9162 section 2.1: the Merkle tree
// ---------------------------------------------------------------------------------------------------------

const HASH_SIZE = 32;

/** @param {...Uint8Array} parts */
function sha256(...parts) {
  const hash = crypto.createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
}

/** The hash of a leaf: SHA-256(0x00 || leaf). @param {Uint8Array} bytes */
const leafHash = (bytes) => sha256(Uint8Array.of(0), bytes);

/** The hash of an inner node: SHA-256(0x01 || left || right). @param {Uint8Array} left @param {Uint8Array} right */
const nodeHash = (left, right) => sha256(Uint8Array.of(1), left, right);

/** A leaf of the audit tree: the UTF-8 bytes of the canonical JSON of the log object. @param {unknown} log */
const logLeaf = (log) => Buffer.from(canonicalJson(log), 'utf8');

/** @param {unknown} log */
const logLeafHash = (log) => leafHash(logLeaf(log));

/** The largest power of two smaller than n (n > 1): where RFC 9162 splits a tree of n leaves. */
function split(/** @type {number} */ n) {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * MTH(D[n]) of RFC 9162 section 2.1.1, from the leaves' hashes (the recursive definition, as written).
 * @param {Uint8Array[]} hashes
 * @returns {Buffer}
 */
function rootFromLeaves(hashes) {
  if (hashes.length === 0) return sha256();
  if (hashes.length === 1) return Buffer.from(hashes[0]);
  const k = split(hashes.length);
  return nodeHash(rootFromLeaves(hashes.slice(0, k)), rootFromLeaves(hashes.slice(k)));
}

/**
 * PATH(m, D[n]) of RFC 9162 section 2.1.3.1: the inclusion proof of leaf `index` in the tree of the first
 * `size` leaves. For tests and examples; the service computes its own.
 * @param {Uint8Array[]} hashes @param {number} index @param {number} size
 * @returns {Buffer[]}
 */
function inclusionProof(hashes, index, size) {
  if (!(index >= 0 && index < size && size <= hashes.length))
    throw new RangeError('inclusionProof: bad index or size');
  /** @type {(m: number, d: Uint8Array[]) => Buffer[]} */
  const path = (m, d) => {
    if (d.length <= 1) return [];
    const k = split(d.length);
    return m < k
      ? [...path(m, d.slice(0, k)), rootFromLeaves(d.slice(k))]
      : [...path(m - k, d.slice(k)), rootFromLeaves(d.slice(0, k))];
  };
  return path(index, hashes.slice(0, size));
}

/**
 * PROOF(m, D[n]) of RFC 9162 section 2.1.4.1: the consistency proof from the tree of the first `first` leaves
 * to that of the first `second` (0 < first <= second; empty when they are equal).
 * @param {Uint8Array[]} hashes @param {number} first @param {number} second
 * @returns {Buffer[]}
 */
function consistencyProof(hashes, first, second) {
  if (!(first > 0 && first <= second && second <= hashes.length))
    throw new RangeError('consistencyProof: bad sizes');
  /** SUBPROOF(m, D[n], b) @type {(m: number, d: Uint8Array[], b: boolean) => Buffer[]} */
  const subproof = (m, d, b) => {
    if (m === d.length) return b ? [] : [rootFromLeaves(d)];
    const k = split(d.length);
    return m <= k
      ? [...subproof(m, d.slice(0, k), b), rootFromLeaves(d.slice(k))]
      : [...subproof(m - k, d.slice(k), false), rootFromLeaves(d.slice(0, k))];
  };
  return subproof(first, hashes.slice(0, second), true);
}

/** @param {unknown} n @returns {n is number} */
const isSize = (n) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
/** @param {unknown} h @returns {h is Uint8Array} */
const isHash = (h) => h instanceof Uint8Array && h.length === HASH_SIZE;
/** @param {unknown} path @returns {path is Uint8Array[]} */
const isPath = (path) => Array.isArray(path) && path.every(isHash);
const half = (/** @type {number} */ n) => Math.floor(n / 2);
const odd = (/** @type {number} */ n) => n % 2 === 1;
function isPowerOfTwo(/** @type {number} */ n) {
  let k = 1;
  while (k < n) k *= 2;
  return k === n;
}

/**
 * RFC 9162 section 2.1.3.2: does `path` prove that the leaf hashed `hash` is leaf `index` of the tree of
 * `treeSize` leaves whose root is `root`? False (never an exception) for anything malformed.
 * @param {unknown} hash @param {unknown} index @param {unknown} treeSize @param {unknown} path @param {unknown} root
 * @returns {boolean}
 */
function verifyInclusion(hash, index, treeSize, path, root) {
  if (!isHash(hash) || !isHash(root) || !isPath(path) || !isSize(index) || !isSize(treeSize)) return false;
  if (index >= treeSize) return false;
  let fn = index;
  let sn = treeSize - 1;
  let r = Buffer.from(hash);
  for (const p of path) {
    if (sn === 0) return false;
    if (odd(fn) || fn === sn) {
      r = nodeHash(p, r);
      while (!odd(fn) && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      r = nodeHash(r, p);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  return sn === 0 && r.equals(root);
}

/**
 * RFC 9162 section 2.1.4.2: does `path` prove that the tree of `first` leaves with root `firstRoot` is a
 * prefix of the tree of `second` leaves with root `secondRoot`? RFC 9162 defines proofs for
 * 0 < first < second; two trees of the same size are consistent when their roots are equal and the proof is
 * empty. False (never an exception) for anything malformed.
 * @param {unknown} first @param {unknown} second @param {unknown} firstRoot @param {unknown} secondRoot
 * @param {unknown} path
 * @returns {boolean}
 */
function verifyConsistency(first, second, firstRoot, secondRoot, path) {
  if (!isSize(first) || !isSize(second) || !isHash(firstRoot) || !isHash(secondRoot) || !isPath(path))
    return false;
  if (first === 0 || first > second) return false;
  if (first === second) return path.length === 0 && Buffer.from(firstRoot).equals(secondRoot);
  if (path.length === 0) return false;
  // When the first tree is a complete subtree of the second, its root is the proof's first node.
  const nodes = isPowerOfTwo(first) ? [firstRoot, ...path] : path;
  let fn = first - 1;
  let sn = second - 1;
  while (odd(fn)) [fn, sn] = [half(fn), half(sn)];
  let fr = Buffer.from(nodes[0]);
  let sr = Buffer.from(nodes[0]);
  for (const c of nodes.slice(1)) {
    if (sn === 0) return false;
    if (odd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (!odd(fn) && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      sr = nodeHash(sr, c);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  return fr.equals(firstRoot) && sr.equals(secondRoot) && sn === 0;
}

// ---------------------------------------------------------------------------------------------------------
// C2SP signed notes and checkpoints
// ---------------------------------------------------------------------------------------------------------

const ED25519 = 0x01; // the signed-note signature type of Ed25519
const MAX_SIGNATURES = 100;

/** Standard padded base64 (RFC 4648 section 4), strictly: null for anything else. @param {unknown} s */
function decodeBase64(s) {
  if (typeof s !== 'string' || s.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return null;
  const bytes = Buffer.from(s, 'base64');
  return bytes.toString('base64') === s ? bytes : null;
}

/** A key name: not empty, no Unicode space, no plus sign. @param {string} name */
const isKeyName = (name) => name !== '' && !/[\s+]/u.test(name);

/**
 * The signed-note key hash (key ID) of an Ed25519 key: the first 4 bytes of
 * SHA-256(key name || 0x0A || 0x01 || 32-byte public key).
 * @param {string} name @param {Uint8Array} publicKey
 */
const keyHash = (name, publicKey) =>
  sha256(Buffer.from(name, 'utf8'), Uint8Array.of(0x0a, ED25519), publicKey).subarray(0, 4);

/**
 * @typedef {{name: string, keyId: Buffer, publicKey: Buffer, verifierKey: string}} VerifierKey
 * @typedef {{name: string, keyId: Buffer, signature: Buffer}} NoteSignature
 * @typedef {{text: string, signatures: NoteSignature[]}} Note
 * @typedef {{origin: string, treeSize: number, rootHash: Buffer, extensions: string[], time?: number}} Checkpoint
 */

/**
 * Parses a verifier key, `<name>+<8 hex digits of the key hash>+<base64(0x01 || 32-byte public key)>`, and
 * checks that the key hash is the key's. Throws on anything else.
 * @param {string} vkey
 * @returns {VerifierKey}
 */
function parseVerifierKey(vkey) {
  const fail = (/** @type {string} */ why) => new Error(`bad verifier key ${JSON.stringify(vkey)}: ${why}`);
  if (typeof vkey !== 'string') throw fail('not a string');
  const plus = vkey.indexOf('+');
  const plus2 = vkey.indexOf('+', plus + 1);
  if (plus < 0 || plus2 < 0) throw fail('expected <name>+<key hash>+<key>');
  const [name, hex, key64] = [vkey.slice(0, plus), vkey.slice(plus + 1, plus2), vkey.slice(plus2 + 1)];
  if (!isKeyName(name)) throw fail('the name is empty or holds a space or a plus sign');
  if (!/^[0-9a-f]{8}$/.test(hex)) throw fail('the key hash is not 8 lowercase hex digits');
  const key = decodeBase64(key64);
  if (!key || key.length !== 33 || key[0] !== ED25519)
    throw fail('the key is not base64 of 0x01 and 32 bytes');
  const publicKey = key.subarray(1);
  if (keyHash(name, publicKey).toString('hex') !== hex)
    throw fail('the key hash is not the key hash of the key');
  return { name, keyId: Buffer.from(hex, 'hex'), publicKey, verifierKey: vkey };
}

/**
 * Parses a signed note (text, a blank line, then lines `— <key name> <base64(key hash || signature)>`)
 * without checking any signature. Throws on a malformed note.
 * @param {string | Uint8Array} note
 * @returns {Note}
 */
function parseNote(note) {
  const fail = (/** @type {string} */ why) => new Error(`malformed note: ${why}`);
  let s;
  try {
    s = typeof note === 'string' ? note : new TextDecoder('utf-8', { fatal: true }).decode(note);
  } catch {
    throw fail('not UTF-8');
  }
  if (LONE_SURROGATE.test(s)) throw fail('not UTF-8');
  if ([...s].some((c) => c < ' ' && c !== '\n')) throw fail('a control character other than newline');
  const blank = s.lastIndexOf('\n\n'); // the last empty line separates the text from the signatures
  if (blank < 0) throw fail('no blank line before the signatures');
  const text = s.slice(0, blank + 1);
  const block = s.slice(blank + 2);
  if (block === '') throw fail('it ends with an empty line, not with a signature line');
  if (!block.endsWith('\n')) throw fail('the signatures do not end with a newline');
  const lines = block.slice(0, -1).split('\n');
  if (lines.length > MAX_SIGNATURES) throw fail('too many signatures');
  const signatures = lines.map((line) => {
    const m = /^\u2014 (\S+) (\S+)$/u.exec(line); // em dash, space, key name, space, base64
    const bytes = m && decodeBase64(m[2]);
    if (!m || !isKeyName(m[1]) || !bytes || bytes.length < 5) throw fail(`not a signature line: ${line}`);
    return { name: m[1], keyId: bytes.subarray(0, 4), signature: bytes.subarray(4) };
  });
  return { text, signatures };
}

/**
 * The signed note a file holds. A note ends with its last signature line's newline; one extra newline at
 * the end of the file (as `jq -r .note > file` writes) is not the note's and is dropped. Throws on more.
 * @param {Uint8Array} bytes
 * @returns {Uint8Array}
 */
function noteFromFile(bytes) {
  let newlines = 0;
  while (newlines < bytes.length && bytes[bytes.length - 1 - newlines] === 0x0a) newlines++;
  if (newlines > 2)
    throw new Error(
      `malformed note: the file ends with ${newlines - 1} newlines after the note's last line, where one extra newline is accepted`,
    );
  return newlines === 2 ? bytes.subarray(0, -1) : bytes;
}

/**
 * Checks a signed note's signature by one key (a verifier key string, or parsed): the note must carry a
 * signature with the key's name and key hash, and every such signature must verify (signatures by other
 * keys are ignored, as the standard says). Returns the note; throws when it is not signed by the key.
 * @param {string | Uint8Array} note @param {string | VerifierKey} verifierKey
 * @returns {Note}
 */
function openNote(note, verifierKey) {
  const key = typeof verifierKey === 'string' ? parseVerifierKey(verifierKey) : verifierKey;
  const parsed = parseNote(note);
  const id = `${key.name}+${key.keyId.toString('hex')}`;
  const mine = parsed.signatures.filter((sig) => sig.name === key.name && sig.keyId.equals(key.keyId));
  if (mine.length === 0) throw new Error(`the note has no signature by key ${id}`);
  const publicKey = crypto.createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: key.publicKey.toString('base64url') },
    format: 'jwk',
  });
  const text = Buffer.from(parsed.text, 'utf8');
  for (const sig of mine) {
    if (sig.signature.length !== 64 || !crypto.verify(null, text, publicKey, sig.signature))
      throw new Error(`invalid signature for key ${id}`);
  }
  return parsed;
}

/**
 * Parses a checkpoint's note text: origin, tree size (decimal, no leading zero), base64 root hash, then
 * optional non-empty extension lines. The service's extension line `time <seconds since the Unix epoch>`
 * (when it signed the checkpoint; older checkpoints have none) is returned as `time`.
 * @param {string} text
 * @returns {Checkpoint}
 */
function parseCheckpoint(text) {
  const fail = (/** @type {string} */ why) => new Error(`malformed checkpoint: ${why}`);
  if (!text.endsWith('\n')) throw fail('the text does not end with a newline');
  const [origin, size, root, ...extensions] = text.slice(0, -1).split('\n');
  if (!origin) throw fail('no origin');
  if (!/^(0|[1-9][0-9]*)$/.test(size ?? '') || !Number.isSafeInteger(Number(size)))
    throw fail('bad tree size');
  const rootHash = decodeBase64(root);
  if (!rootHash || rootHash.length !== HASH_SIZE) throw fail('the root hash is not base64 of 32 bytes');
  if (extensions.some((line) => line === '')) throw fail('an empty extension line');
  const times = extensions.filter((line) => /^time( |$)/.test(line));
  if (times.length > 1) throw fail('more than one time line');
  const time = times.length ? /^time (0|[1-9][0-9]{0,14})$/.exec(times[0]) : null;
  if (times.length && !time) throw fail('the time line is not "time" and a number of seconds');
  return { origin, treeSize: Number(size), rootHash, extensions, ...(time ? { time: Number(time[1]) } : {}) };
}

/**
 * Verifies a signed checkpoint with a verifier key and returns it parsed; throws a clear error when the note
 * is malformed, is not signed by the key, or its signature does not verify.
 * @param {string | Uint8Array} note @param {string | VerifierKey} verifierKey
 * @returns {Checkpoint}
 */
const verifyNote = (note, verifierKey) => parseCheckpoint(openNote(note, verifierKey).text);

// ---------------------------------------------------------------------------------------------------------
// The program: checks a running service
// ---------------------------------------------------------------------------------------------------------

const USAGE = `usage: node verify-audit.js --url URL --key KEY [--checkpoint FILE] [--verifier-key VKEY] [--limit N]

  --url           the service, e.g. http://localhost:3000
  --key           a key with log:read (or set VAULT_API_KEY)
  --checkpoint    a signed checkpoint kept earlier: the log must still extend it
  --verifier-key  the checkpoint signing key, <name>+<key hash>+<key>, as kept outside the service
                  (without it, the keys the service lists are trusted)
  --limit         how many of the newest rows to check (default 100)`;

/** @typedef {{status: number, body: any}} Answer */

/** A failed request, for a report line. @param {Answer} res */
const describe = (res) => `answered ${res.status}${res.body?.code ? ` ${res.body.code}` : ''}`;

/** A base64 proof path as bytes; an entry that is not base64 becomes null, which no verification accepts. */
const decodePath = (/** @type {unknown} */ path) => (Array.isArray(path) ? path.map(decodeBase64) : null);

/** An error's message, with its cause's (fetch failed: connect ECONNREFUSED ...). @returns {string} */
const message = (/** @type {unknown} */ e) =>
  e instanceof Error ? `${e.message}${e.cause ? `: ${message(e.cause)}` : ''}` : String(e);

/**
 * Checks the service at `options.url`: the latest checkpoint's signature, its consistency with a checkpoint
 * kept earlier, and the inclusion of the newest rows. Prints one line per check through `log`.
 * @param {{url: string, key: string, checkpoint?: string, verifierKey?: string, limit: number}} options
 * @param {(line: string) => void} [log]
 */
async function run(options, log = console.log) {
  const report = { passed: 0, failed: 0, skipped: 0, rows: 0 };
  const check = (/** @type {boolean} */ ok, /** @type {string} */ what) => {
    log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
    report[ok ? 'passed' : 'failed']++;
    return ok;
  };
  const skip = (/** @type {string} */ what) => {
    log(`skip ${what}`);
    report.skipped++;
  };
  const base = options.url.replace(/\/+$/, '');
  const get = async (/** @type {string} */ path) => {
    const res = await fetch(base + path, {
      headers: { 'BT-API-KEY': options.key, Accept: 'application/json' },
    });
    const text = await res.text();
    /** @type {Answer} */
    const answer = { status: res.status, body: text };
    try {
      answer.body = JSON.parse(text);
    } catch {
      // not JSON: kept as text
    }
    return answer;
  };

  // 1. The keys a checkpoint must be signed with: the one given, else those the service lists.
  /** @type {VerifierKey[]} */
  const keys = [];
  if (options.verifierKey) keys.push(parseVerifierKey(options.verifierKey));
  else {
    log(
      'warn no --verifier-key: trusting the keys the service lists, which a compromised service could replace',
    );
    const listed = await get('/logs/checkpoint/keys');
    if (listed.status !== 200 || !Array.isArray(listed.body)) {
      check(false, `GET /logs/checkpoint/keys ${describe(listed)}`);
      return report;
    }
    for (const k of listed.body) {
      try {
        const key = parseVerifierKey(k.verifier_key);
        const same = key.name === k.name && key.keyId.toString('hex') === k.key_id;
        if (check(same && key.publicKey.toString('base64') === k.public_key, `listed key ${k.verifier_key}`))
          keys.push(key);
      } catch (e) {
        check(false, `listed key: ${message(e)}`);
      }
    }
  }

  /** A note's checkpoint, if it carries a signature by a trusted key and every such signature verifies. */
  const checkNote = (
    /** @type {string} */ what,
    /** @type {string | Uint8Array | (() => Uint8Array)} */ read,
  ) => {
    try {
      const note = typeof read === 'function' ? read() : read;
      const { signatures } = parseNote(note);
      const signers = keys.filter((key) =>
        signatures.some((s) => s.name === key.name && s.keyId.equals(key.keyId)),
      );
      if (signers.length === 0) throw new Error('not signed by a trusted key');
      const [checkpoint] = signers.map((key) => verifyNote(note, key));
      check(
        true,
        `${what}: signed by ${signers.map((k) => `${k.name}+${k.keyId.toString('hex')}`).join(', ')}`,
      );
      return checkpoint;
    } catch (e) {
      check(false, `${what}: ${message(e)}`);
      return null;
    }
  };

  // 2. The latest checkpoint.
  const latest = await get('/logs/checkpoint');
  if (latest.status !== 200) {
    check(false, `GET /logs/checkpoint ${describe(latest)}`);
    return report;
  }
  const current = checkNote('the latest checkpoint', latest.body.note);
  if (!current) return report;
  const N = current.treeSize;
  const { origin, tree_size, root_hash } = latest.body;
  check(
    origin === current.origin && tree_size === N && root_hash === current.rootHash.toString('base64'),
    `the latest checkpoint's origin, tree_size and root_hash are its note's (${current.origin}, size ${N})`,
  );

  // 3. A checkpoint kept earlier: the log must have grown from it, not been rewritten.
  const file = options.checkpoint;
  const saved = file && checkNote('the saved checkpoint', () => noteFromFile(fs.readFileSync(file)));
  if (saved) {
    const what = `the log at size ${N} extends the saved checkpoint at size ${saved.treeSize}`;
    if (saved.origin !== current.origin)
      check(false, `the saved checkpoint is of another log: ${saved.origin}`);
    else if (saved.treeSize > N) check(false, `${what}: the saved checkpoint is larger than the latest`);
    else if (saved.treeSize === N)
      check(saved.rootHash.equals(current.rootHash), `${what} (same size, same root)`);
    else {
      const res = await get(`/logs/consistency?first=${saved.treeSize}&second=${N}`);
      const { first, second, consistency_path: path } = res.body ?? {};
      const ok = res.status === 200 && first === saved.treeSize && second === N;
      const proved =
        ok && verifyConsistency(first, second, saved.rootHash, current.rootHash, decodePath(path));
      check(proved, `${what} (consistency proof${res.status === 200 ? '' : ` ${describe(res)}`})`);
    }
  }

  // 4. The newest rows, each proved to be a leaf of the latest checkpoint's tree.
  const checkRow = async (/** @type {any} */ row) => {
    const where = `row ${row.id}`;
    const proofOf = (/** @type {string} */ query) => get(`/logs/${encodeURIComponent(row.id)}/proof${query}`);
    const res = await proofOf(`?tree_size=${N}`);
    if (res.status === 409) return skip(`${where}: not yet in a checkpoint`);
    if (res.status === 400) {
      // Written after the checkpoint above was read, the row may be in a newer one, which size N does not hold.
      const newer = await proofOf('');
      if (newer.status === 200 && newer.body.tree_size > N && newer.body.leaf_index >= N)
        return skip(`${where}: in a checkpoint newer than size ${N}`);
    }
    if (res.status !== 200) return void check(false, `${where}: GET /logs/${row.id}/proof ${describe(res)}`);
    const { log: proved, leaf_index: index, tree_size: size, inclusion_path: path } = res.body;
    const problems = [];
    if (size !== N) problems.push(`the proof is for tree size ${size}`);
    if (canonicalJson(proved) !== canonicalJson(row))
      problems.push("the proof's log is not the row GET /logs lists");
    if (!current.origin.endsWith(`/audit/${row.tenant_id}`))
      problems.push("the row's tenant is not the checkpoint's");
    if (!verifyInclusion(logLeafHash(row), index, N, decodePath(path), current.rootHash))
      problems.push('the inclusion proof does not verify');
    check(
      problems.length === 0,
      `${where} is leaf ${index} of ${N}${problems.map((p) => `; ${p}`).join('')}`,
    );
  };

  for (let start = ''; report.rows < options.limit;) {
    const size = Math.min(100, options.limit - report.rows);
    const page = await get(`/logs?size=${size}${start ? `&start=${encodeURIComponent(start)}` : ''}`);
    if (page.status !== 200 || !Array.isArray(page.body?.data)) {
      check(false, `GET /logs ${describe(page)}`);
      break;
    }
    for (const row of page.body.data.slice(0, options.limit - report.rows)) {
      report.rows++;
      await checkRow(row).catch((e) => check(false, `row ${row?.id}: ${message(e)}`));
    }
    start = page.body.pagination?.after;
    if (!start || page.body.data.length === 0) break;
  }
  return report;
}

/** The command line: exit 0 when every check passed, 1 otherwise. @param {string[]} argv */
async function main(argv) {
  let options;
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        url: { type: 'string' },
        key: { type: 'string' },
        checkpoint: { type: 'string' },
        'verifier-key': { type: 'string' },
        limit: { type: 'string', default: '100' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help) {
      console.log(USAGE);
      return 0;
    }
    const key = values.key ?? process.env.VAULT_API_KEY;
    const limit = Number(values.limit);
    if (!values.url || !key || !Number.isSafeInteger(limit) || limit < 1) throw new Error(USAGE);
    options = {
      url: values.url,
      key,
      checkpoint: values.checkpoint,
      verifierKey: values['verifier-key'],
      limit,
    };
  } catch (e) {
    console.error(message(e));
    return 1;
  }
  try {
    const r = await run(options);
    console.log(
      `${r.passed} passed, ${r.failed} failed, ${r.skipped} rows skipped (not yet checkpointed); ${r.rows} rows read`,
    );
    return r.failed === 0 && r.passed > 0 ? 0 : 1;
  } catch (e) {
    console.log(`FAIL ${message(e)}`);
    return 1;
  }
}

module.exports = {
  canonicalJson,
  leafHash,
  nodeHash,
  logLeaf,
  logLeafHash,
  rootFromLeaves,
  inclusionProof,
  consistencyProof,
  verifyInclusion,
  verifyConsistency,
  decodeBase64,
  keyHash,
  parseVerifierKey,
  parseNote,
  noteFromFile,
  openNote,
  parseCheckpoint,
  verifyNote,
  run,
  main,
};

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
