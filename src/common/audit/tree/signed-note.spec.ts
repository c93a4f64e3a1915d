import { canonicalJson } from './canonical-json';
import {
  checkpointBody,
  checkpointTime,
  keyHash,
  noteSignedBy,
  parseCheckpoint,
  parseNote,
  publicKeyOf,
  signNote,
  verifierKey,
} from './signed-note';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const independent = require('../../../../examples/verify-audit/verify-audit');

// golang.org/x/mod/sumdb/note's test vectors (note_test.go): the key, the text and its signature line.
const PETER_SEED = Buffer.from('AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz', 'base64').subarray(1);
const PETER_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const PETER_TEXT =
  'If you think cryptography is the answer to your problem,\n' +
  "then you don't know what your problem is.\n";
const PETER_SIG =
  '— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n';

describe('signed notes (C2SP signed-note, Ed25519)', () => {
  const peter = { name: 'PeterNeumann', publicKey: publicKeyOf(PETER_SEED) };

  it("signs as Go's note package does, and gives its verifier key and key hash", () => {
    expect(signNote(PETER_TEXT, 'PeterNeumann', PETER_SEED)).toBe(`${PETER_TEXT}\n${PETER_SIG}`);
    expect(verifierKey(peter)).toBe(PETER_VKEY);
    expect(keyHash('PeterNeumann', peter.publicKey).toString('hex')).toBe('c74f20a3');
  });

  it('checks signatures: a changed byte, another name or another key fails', () => {
    const note = `${PETER_TEXT}\n${PETER_SIG}`;
    expect(noteSignedBy(note, peter)).toBe(true);
    expect(noteSignedBy(note.replace('answer', 'Answer'), peter)).toBe(false);
    expect(noteSignedBy(note, { ...peter, name: 'EnochRoot' })).toBe(false);
    expect(noteSignedBy(note, { name: 'PeterNeumann', publicKey: publicKeyOf(Buffer.alloc(32)) })).toBe(
      false,
    );
    expect(noteSignedBy('no blank line\n', peter)).toBe(false);
    expect(parseNote(`${PETER_TEXT}\n— PeterNeumann not base64!\n`)).toBeUndefined();
  });

  it('makes checkpoints the independent verifier opens', () => {
    const seed = Buffer.alloc(32, 1);
    const name = 'vault.example.com/audit';
    const body = checkpointBody({
      origin: `${name}/0d000000-0000-4000-8000-000000000000`,
      treeSize: 3,
      rootHash: Buffer.alloc(32, 9),
    });
    const note = signNote(body, name, seed);
    const opened = independent.verifyNote(note, verifierKey({ name, publicKey: publicKeyOf(seed) }));
    expect(opened.treeSize).toBe(3);
    expect(parseCheckpoint(parseNote(note)!.text)).toEqual({
      origin: `${name}/0d000000-0000-4000-8000-000000000000`,
      treeSize: 3,
      rootHash: Buffer.alloc(32, 9),
    });
    expect(parseCheckpoint('origin\n03\nAAAA\n')).toBeUndefined();
  });

  it('carries the time it was signed as the extension line `time <seconds>`; checkpoints without one still open', () => {
    const seed = Buffer.alloc(32, 1);
    const name = 'vault.example.com/audit';
    const origin = `${name}/0d000000-0000-4000-8000-000000000000`;
    const at = new Date('2026-11-28T20:12:17.999Z');
    const body = checkpointBody({
      origin,
      treeSize: 3,
      rootHash: Buffer.alloc(32, 9),
      time: checkpointTime(at),
    });
    expect(body).toBe(`${origin}\n3\n${Buffer.alloc(32, 9).toString('base64')}\ntime 1795896737\n`);
    const note = signNote(body, name, seed);
    const opened = independent.verifyNote(note, verifierKey({ name, publicKey: publicKeyOf(seed) }));
    expect(opened.extensions).toEqual(['time 1795896737']);
    expect(opened.time).toBe(1795896737);
    expect(parseCheckpoint(parseNote(note)!.text)).toEqual({
      origin,
      treeSize: 3,
      rootHash: Buffer.alloc(32, 9),
      time: 1795896737,
    });
    // The C2SP tlog-checkpoint specification's example: no extension line, no time.
    const sofa = 'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n';
    expect(parseCheckpoint(sofa)).toEqual({
      origin: 'example.com/behind-the-sofa',
      treeSize: 20852163,
      rootHash: Buffer.from('CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=', 'base64'),
    });
    expect(parseCheckpoint(`${sofa}another party's line\n`)?.time).toBeUndefined();
    expect(parseCheckpoint(`${sofa}another party's line\ntime 5\n`)?.time).toBe(5);
    for (const bad of ['time\n', 'time 01\n', 'time -5\n', 'time 1.5\n', 'time 5\ntime 6\n', '\n'])
      expect(parseCheckpoint(`${sofa}${bad}`)).toBeUndefined();
  });
});

describe('canonical JSON (RFC 8785)', () => {
  it('sorts members by UTF-16 code units, escapes as ECMAScript does, as the independent verifier does', () => {
    // RFC 8785 section 3.2.3's sorting example.
    const sorting = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    expect(Object.keys(JSON.parse(canonicalJson(sorting)))).toEqual(
      Object.keys(JSON.parse(independent.canonicalJson(sorting))),
    );
    expect(canonicalJson(sorting)).toBe(independent.canonicalJson(sorting));
    const log = {
      id: '0d000000-0000-4000-8000-000000000001',
      tenant_id: '0d000000-0000-4000-8000-000000000000',
      actor_id: null,
      actor_type: 'application',
      entity_type: 'token',
      entity_id: 'tok "quoted" \\ \u2028 \u0007',
      operation: 'create',
      message: 'Token créé \ud83d\ude00',
      created_at: '2026-11-26T17:01:02.345Z',
    };
    expect(canonicalJson(log)).toBe(independent.canonicalJson(log));
    expect(canonicalJson({ b: [1, 1e21, 0.000001, -0], a: true })).toBe(
      '{"a":true,"b":[1,1e+21,0.000001,0]}',
    );
  });
});
