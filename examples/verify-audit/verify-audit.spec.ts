import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as v from './verify-audit';

// The standalone audit verifier (examples/verify-audit) checked against the standards' own vectors, then
// against a fake service (in place of `fetch`: no socket). Each vector says where it comes from.

const hex = (s: string): Buffer => Buffer.from(s, 'hex');
const b64 = (s: string): Buffer => Buffer.from(s, 'base64');
const toHex = (list: Buffer[]): string[] => list.map((b) => b.toString('hex'));

/** An IEEE 754 double from its 64 bits in hex. */
function double(bits: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${bits}`));
  return view.getFloat64(0);
}

/** An Ed25519 signer from a 32-byte seed, writing signed-note signature lines (for tests only). */
function noteSigner(name: string, seed: Buffer) {
  const pkcs8 = Buffer.concat([hex('302e020100300506032b657004220420'), seed]);
  const privateKey = crypto.createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  const publicKey = Buffer.from(crypto.createPublicKey(privateKey).export({ format: 'jwk' }).x!, 'base64url');
  const keyId = v.keyHash(name, publicKey);
  return {
    publicKey,
    keyId,
    verifierKey: `${name}+${keyId.toString('hex')}+${Buffer.concat([Buffer.of(1), publicKey]).toString('base64')}`,
    signature: (text: string, as = name, id: Buffer = keyId): string =>
      `— ${as} ${Buffer.concat([id, crypto.sign(null, Buffer.from(text), privateKey)]).toString('base64')}\n`,
    sign(text: string): string {
      return `${text}\n${this.signature(text)}`;
    },
  };
}

describe('RFC 8785 canonical JSON', () => {
  it('writes the sample of sections 3.2.2 and 3.2.4, byte for byte', () => {
    const input = String.raw`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }`;
    const canonical = v.canonicalJson(JSON.parse(input));
    expect(canonical).toBe(
      String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
    );
    // Section 3.2.4: the UTF-8 bytes.
    expect(Buffer.from(canonical, 'utf8').toString('hex')).toBe(
      '7b226c69746572616c73223a5b6e756c6c2c747275652c66616c73655d2c226e' +
        '756d62657273223a5b3333333333333333332e333333333333332c31652b3330' +
        '2c342e352c302e3030322c31652d32375d2c22737472696e67223a22e282ac24' +
        '5c75303030665c6e4127425c225c5c5c5c5c222f227d',
    );
  });

  it('sorts members by UTF-16 code units (section 3.2.3)', () => {
    const input = String.raw`{
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }`;
    const written = v.canonicalJson(JSON.parse(input));
    const values = [...written.matchAll(/:"([^"]*)"/g)].map((m) => m[1]);
    expect(values).toEqual([
      'Carriage Return',
      'One',
      'Control',
      'Latin Small Letter O With Diaeresis',
      'Euro Sign',
      'Emoji: Grinning Face',
      'Hebrew Letter Dalet With Dagesh',
    ]);
  });

  // The RFC's authors' test data (github.com/cyberphone/json-canonicalization, testdata/input and output).
  it.each([
    ['arrays', '[56, {"d": true, "10": null, "1": [ ]}]', '[56,{"1":[],"10":null,"d":true}]'],
    [
      'french',
      '{"peach": "This sorting order", "péché": "is wrong according to French", "pêche": "but canonicalization MUST", "sin": "ignore locale"}',
      '{"peach":"This sorting order","péché":"is wrong according to French","pêche":"but canonicalization MUST","sin":"ignore locale"}',
    ],
    [
      'structures',
      String.raw`{"1": {"f": {"f": "hi","F": 5} ,"\n": 56.0}, "10": { }, "": "empty", "a": { }, "111": [ {"e": "yes","E": "no" } ], "A": { }}`,
      String.raw`{"":"empty","1":{"\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{"E":"no","e":"yes"}],"A":{},"a":{}}`,
    ],
    ['unicode', String.raw`{"Unnormalized Unicode":"A\u030a"}`, '{"Unnormalized Unicode":"A\u030a"}'],
    [
      'weird',
      String.raw`{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\u000a": "Newline", "1": "One", "\u0080": "Control\u007f", "\ud83d\ude02": "Smiley", "\u00f6": "Latin Small Letter O With Diaeresis", "\ufb33": "Hebrew Letter Dalet With Dagesh", "</script>": "Browser Challenge"}`,
      String.raw`{"\n":"Newline","\r":"Carriage Return","1":"One","</script>":"Browser Challenge",` +
        '"\u0080":"Control\u007f","ö":"Latin Small Letter O With Diaeresis","€":"Euro Sign","😂":"Smiley",' +
        '"\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    ],
  ])('canonicalizes the %s test file', (_name, input, output) => {
    expect(v.canonicalJson(JSON.parse(input))).toBe(output);
  });

  // Appendix B: IEEE 754 bits and the JSON number RFC 8785 writes.
  it.each([
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ])('writes the number with bits %s as %s (Appendix B)', (bits, json) => {
    expect(v.canonicalJson(double(bits))).toBe(json);
    expect(v.canonicalJson([double(bits)])).toBe(`[${json}]`);
  });

  it('refuses what is not I-JSON: NaN, the infinities (Appendix B), lone surrogates, undefined', () => {
    for (const bad of [double('7fffffffffffffff'), double('7ff0000000000000'), -Infinity]) {
      expect(() => v.canonicalJson({ n: bad })).toThrow(/NaN/);
    }
    expect(() => v.canonicalJson('\ud800')).toThrow(/surrogate/);
    expect(() => v.canonicalJson({ '\udc00': 1 })).toThrow(/surrogate/);
    expect(() => v.canonicalJson({ a: undefined })).toThrow(TypeError);
    expect(() => v.canonicalJson(new Date(0))).toThrow(/plain object/);
    expect(() => v.canonicalJson(1n)).toThrow(TypeError);
  });

  it('writes a log object as its leaf: members sorted, nulls kept, no whitespace', () => {
    const log = {
      id: '0b5e',
      tenant_id: 't',
      actor_id: null,
      actor_type: 'system',
      entity_type: 'connection',
      entity_id: 'c',
      operation: 'update',
      message: 'connection verified: available',
      created_at: '2026-11-26T17:01:02.345Z',
    };
    expect(v.logLeaf(log).toString('utf8')).toBe(
      '{"actor_id":null,"actor_type":"system","created_at":"2026-11-26T17:01:02.345Z","entity_id":"c",' +
        '"entity_type":"connection","id":"0b5e","message":"connection verified: available","operation":"update",' +
        '"tenant_id":"t"}',
    );
    expect(v.logLeafHash(log)).toEqual(v.leafHash(v.logLeaf(log)));
  });
});

// The test vectors of Certificate Transparency's reference implementations (RFC 6962, whose hashing RFC 9162
// keeps), as github.com/transparency-dev/merkle has them: testonly/constants.go (leaves, roots) and
// cmd/proofgen/main.go (proofs, and the corruptions its testdata/ probes apply to them).
const CT_LEAVES = [
  '',
  '00',
  '10',
  '2021',
  '3031',
  '40414243',
  '5051525354555657',
  '606162636465666768696a6b6c6d6e6f',
].map(hex);
const CT_ROOTS = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', // the empty tree
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
].map(hex);
const CT_LEAF_HASHES = [
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
  '0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7',
  '07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7',
  'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
  '4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658',
  'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f',
  '46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1',
];
// [leaf index (0-based), tree size, path]
const CT_INCLUSION: [number, number, string[]][] = [
  [0, 1, []],
  [
    0,
    8,
    [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  ],
  [
    5,
    8,
    [
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  ],
  [2, 3, ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125']],
  [
    1,
    5,
    [
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ],
  ],
];
// [first, second, path]
const CT_CONSISTENCY: [number, number, string[]][] = [
  [1, 1, []],
  [
    1,
    8,
    [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  ],
  [
    6,
    8,
    [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  ],
  [
    2,
    5,
    [
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ],
  ],
  [
    6,
    7,
    [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  ],
];
const SOME_HASH = hex('abacaba000000000000000000000000000000000000000000060061e00123456');
const EMPTY_ROOT = CT_ROOTS[0];

describe('RFC 9162 Merkle tree: the Certificate Transparency vectors', () => {
  const hashes = CT_LEAVES.map((leaf) => v.leafHash(leaf));

  it('hashes the 8 leaves and finds the roots of sizes 0 to 8', () => {
    expect(toHex(hashes)).toEqual(CT_LEAF_HASHES);
    for (let n = 0; n <= 8; n++) expect(v.rootFromLeaves(hashes.slice(0, n))).toEqual(CT_ROOTS[n]);
    expect(v.nodeHash(hashes[0], hashes[1])).toEqual(CT_ROOTS[2]);
  });

  it.each(CT_INCLUSION)(
    'generates and verifies the inclusion proof of leaf %d in the tree of %d',
    (i, n, want) => {
      const proof = v.inclusionProof(hashes, i, n);
      expect(toHex(proof)).toEqual(want);
      expect(v.verifyInclusion(hashes[i], i, n, proof, CT_ROOTS[n])).toBe(true);
    },
  );

  it.each(CT_CONSISTENCY)('generates and verifies the consistency proof from %d to %d', (m, n, want) => {
    const proof = v.consistencyProof(hashes, m, n);
    expect(toHex(proof)).toEqual(want);
    expect(v.verifyConsistency(m, n, CT_ROOTS[m], CT_ROOTS[n], proof)).toBe(true);
  });

  it.each(CT_INCLUSION.filter(([, n]) => n > 1))(
    'refuses each corruption of the inclusion proof of leaf %d in %d',
    (i, n, want) => {
      const [leaf, root, proof] = [hashes[i], CT_ROOTS[n], want.map(hex)];
      const flip = (k: number) =>
        proof.map((p, j) => (j === k ? Buffer.from(p.map((b, x) => (x ? b : b ^ 8))) : p));
      const probes: [number, number, Buffer, Buffer, Buffer[]][] = [
        [i - 1, n, leaf, root, proof],
        [i + 1, n, leaf, root, proof],
        [i ^ 2, n, leaf, root, proof],
        [i, n * 2, leaf, root, proof],
        [i, Math.floor(n / 2), leaf, root, proof],
        [i, n, Buffer.from('WrongLeaf'), root, proof],
        [i, n, hashes[(i + 1) % 8], root, proof],
        [i, n, leaf, EMPTY_ROOT, proof],
        [i, n, leaf, SOME_HASH, proof],
        [i, n, leaf, root, [...proof, Buffer.alloc(0)]],
        [i, n, leaf, root, [...proof, root]],
        [i, n, leaf, root, [Buffer.alloc(0), ...proof]],
        [i, n, leaf, root, [root, ...proof]],
        [i, n, leaf, root, proof.slice(0, -1)],
        [i, n, leaf, root, [proof[0], SOME_HASH, ...proof.slice(1)]],
        ...proof.map((_, k): [number, number, Buffer, Buffer, Buffer[]] => [i, n, leaf, root, flip(k)]),
      ];
      for (const probe of probes) expect(v.verifyInclusion(...probe)).toBe(false);
    },
  );

  it.each(CT_CONSISTENCY.filter(([m, n]) => m < n))(
    'refuses each corruption of the consistency proof from %d to %d',
    (m, n, want) => {
      const [r1, r2, proof] = [CT_ROOTS[m], CT_ROOTS[n], want.map(hex)];
      const flip = (k: number) =>
        proof.map((p, j) => (j === k ? Buffer.from(p.map((b, x) => (x ? b : b ^ 16))) : p));
      const probes: [number, number, Buffer, Buffer, Buffer[]][] = [
        [m - 1, n, r1, r2, proof],
        [m + 1, n, r1, r2, proof],
        [m ^ 2, n, r1, r2, proof],
        [m, n * 2, r1, r2, proof],
        [m, Math.floor(n / 2), r1, r2, proof],
        [m, n, Buffer.from('WrongRoot'), r2, proof],
        [m, n, r1, Buffer.from('WrongRoot'), proof],
        [m, n, r2, r1, proof],
        [m, n, r1, r2, []],
        [m, n, r1, r2, [...proof, Buffer.alloc(0)]],
        [m, n, r1, r2, [...proof, r1]],
        [m, n, r1, r2, [...proof, r2]],
        [m, n, r1, r2, [Buffer.alloc(0), ...proof]],
        [m, n, r1, r2, [r1, ...proof]],
        [m, n, r1, r2, [r2, ...proof]],
        [m, n, r1, r2, [proof[0], ...proof]],
        [m, n, r1, r2, proof.slice(0, -1)],
        ...proof.map((_, k): [number, number, Buffer, Buffer, Buffer[]] => [m, n, r1, r2, flip(k)]),
      ];
      for (const probe of probes) expect(v.verifyConsistency(...probe)).toBe(false);
    },
  );

  it('handles the edge cases of the reference probes (testdata/*/additional, single-entry)', () => {
    // A one-leaf tree: the root is the leaf hash and the proof is empty.
    const data = v.leafHash(Buffer.from('data'));
    expect(v.verifyInclusion(data, 0, 1, [], data)).toBe(true);
    expect(v.verifyInclusion(data, 1, 1, [], data)).toBe(false); // an index past the tree (RFC 9162 step 1)
    expect(v.verifyInclusion(data, 0, 0, [], data)).toBe(false);
    expect(v.verifyInclusion(Buffer.alloc(0), 0, 1, [], data)).toBe(false);
    expect(v.verifyInclusion(data, 0, 1, [], Buffer.alloc(0))).toBe(false);
    expect(v.verifyInclusion(Buffer.alloc(0), 0, 1, [], Buffer.alloc(0))).toBe(false);
    for (const [i, n] of [
      [0, 0],
      [0, 1],
      [1, 0],
      [2, 1],
    ]) {
      expect(v.verifyInclusion(SOME_HASH, i, n, [], Buffer.alloc(0))).toBe(false);
      expect(v.verifyInclusion(Buffer.alloc(0), i, n, [], EMPTY_ROOT)).toBe(false);
      expect(v.verifyInclusion(SOME_HASH, i, n, [], EMPTY_ROOT)).toBe(false);
    }
    // Consistency between equal sizes needs equal roots and an empty proof; size 0 proves nothing. (The
    // reference probes use 12-byte stand-ins for roots; here every hash is 32 bytes.)
    const [r1, r2] = [v.leafHash(Buffer.from('1')), v.leafHash(Buffer.from('2'))];
    expect(v.verifyConsistency(1, 1, r2, r2, [])).toBe(true);
    expect(v.verifyConsistency(0, 0, r1, r2, [])).toBe(false);
    expect(v.verifyConsistency(1, 1, r1, r2, [])).toBe(false);
    expect(v.verifyConsistency(0, 0, r1, r1, [])).toBe(false);
    expect(v.verifyConsistency(0, 1, r1, r2, [])).toBe(false);
    expect(v.verifyConsistency(1, 0, r1, r2, [])).toBe(false);
    expect(v.verifyConsistency(2, 1, r1, r2, [])).toBe(false);
    expect(v.verifyConsistency(1, 2, r1, r2, [])).toBe(false);
    expect(v.verifyConsistency(0, 0, EMPTY_ROOT, r2, [])).toBe(false);
    expect(v.verifyConsistency(1, 1, EMPTY_ROOT, r2, [])).toBe(false);
    expect(v.verifyConsistency(0, 0, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT])).toBe(false);
    expect(v.verifyConsistency(1, 1, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT])).toBe(false);
    expect(v.verifyConsistency(0, 1, EMPTY_ROOT, r2, [])).toBe(false);
    expect(v.verifyConsistency(0, 1, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT])).toBe(false);
  });

  it('answers false, never throws, for malformed input', () => {
    const [leaf, root, proof] = [hashes[0], CT_ROOTS[8], v.inclusionProof(hashes, 0, 8)];
    const junk: unknown[] = [undefined, null, 'x', -1, 1.5, NaN, Infinity, 2 ** 53, {}, [1], '0'];
    for (const bad of junk) {
      expect(v.verifyInclusion(bad, 0, 8, proof, root)).toBe(false);
      expect(v.verifyInclusion(leaf, bad, 8, proof, root)).toBe(false);
      expect(v.verifyInclusion(leaf, 0, bad, proof, root)).toBe(false);
      expect(v.verifyInclusion(leaf, 0, 8, bad, root)).toBe(false);
      expect(v.verifyInclusion(leaf, 0, 8, [bad, ...proof.slice(1)], root)).toBe(false);
      expect(v.verifyInclusion(leaf, 0, 8, proof, bad)).toBe(false);
      expect(v.verifyConsistency(bad, 8, CT_ROOTS[1], root, proof)).toBe(false);
      expect(v.verifyConsistency(1, bad, CT_ROOTS[1], root, proof)).toBe(false);
      expect(v.verifyConsistency(1, 8, bad, root, proof)).toBe(false);
      expect(v.verifyConsistency(1, 8, CT_ROOTS[1], bad, proof)).toBe(false);
      expect(v.verifyConsistency(1, 8, CT_ROOTS[1], root, bad)).toBe(false);
    }
    expect(v.verifyInclusion(leaf, 0, 8, proof, root)).toBe(true);
    expect(v.verifyInclusion(new Uint8Array(leaf), 0, 8, proof, new Uint8Array(root))).toBe(true);
  });

  it('refuses to generate proofs outside the tree', () => {
    expect(() => v.inclusionProof(hashes, 8, 8)).toThrow(RangeError);
    expect(() => v.inclusionProof(hashes, 0, 9)).toThrow(RangeError);
    expect(() => v.consistencyProof(hashes, 0, 8)).toThrow(RangeError);
    expect(() => v.consistencyProof(hashes, 5, 4)).toThrow(RangeError);
  });
});

describe('RFC 9162 proofs, generated and verified for every index and size', () => {
  const leaves = (n: number) => Array.from({ length: n }, (_, i) => v.leafHash(Buffer.from(`leaf ${i}`)));
  const flipped = (proof: Buffer[], k: number, byte: number) =>
    proof.map((p, j) => (j === k ? Buffer.from(p.map((b, x) => (x === byte ? b ^ 1 : b))) : p));

  /**
   * The proofs of the given indexes (and first sizes: index + 1) in a tree of n leaves, and their
   * corruptions: what went wrong, for one assertion at the end (jest's expect is slow in such numbers).
   */
  function checkTree(n: number, indexes: number[]): string[] {
    const wrong: string[] = [];
    const want = (ok: boolean, expected: boolean, what: string) => {
      if (ok !== expected) wrong.push(`n=${n}: ${what} gave ${ok}`);
    };
    const hashes = leaves(n + 1); // one more, for the tree of n + 1
    const roots = new Map<number, Buffer>();
    const root = (m: number): Buffer => {
      if (!roots.has(m)) roots.set(m, v.rootFromLeaves(hashes.slice(0, m)));
      return roots.get(m)!;
    };
    for (const i of indexes) {
      const proof = v.inclusionProof(hashes, i, n);
      want(v.verifyInclusion(hashes[i], i, n, proof, root(n)), true, `inclusion of ${i}`);
      for (let k = 0; k < proof.length; k++) {
        const bad = flipped(proof, k, (i + k) % 32);
        want(v.verifyInclusion(hashes[i], i, n, bad, root(n)), false, `inclusion of ${i}, node ${k} flipped`);
      }
      for (const j of [i - 1, i + 1, n - 1 - i]) {
        if (j !== i && j >= 0 && j < n)
          want(v.verifyInclusion(hashes[i], j, n, proof, root(n)), false, `inclusion of ${i} as index ${j}`);
      }
      if (n > 1)
        want(v.verifyInclusion(hashes[(i + 1) % n], i, n, proof, root(n)), false, `another leaf at ${i}`);
      // Another size, with that tree's root (with the root of n, some other sizes make the same path).
      for (const size of [n - 1, n + 1]) {
        if (size > i)
          want(v.verifyInclusion(hashes[i], i, size, proof, root(size)), false, `${i} in size ${size}`);
      }
      const m = i + 1; // every first size from 1 to n
      const consistency = v.consistencyProof(hashes, m, n);
      want(v.verifyConsistency(m, n, root(m), root(n), consistency), true, `consistency from ${m}`);
      for (let k = 0; k < consistency.length; k++) {
        const bad = flipped(consistency, k, (m + k) % 32);
        want(
          v.verifyConsistency(m, n, root(m), root(n), bad),
          false,
          `consistency from ${m}, node ${k} flipped`,
        );
      }
      for (const other of [m - 1, m + 1]) {
        if (other < 1 || other >= n) continue;
        want(
          v.verifyConsistency(other, n, root(other), root(n), consistency),
          false,
          `${m}'s proof from ${other}`,
        );
        want(
          v.verifyConsistency(other, n, root(m), root(n), consistency),
          false,
          `${m}'s proof and root as ${other}`,
        );
      }
      if (m < n) {
        want(
          v.verifyConsistency(m, n + 1, root(m), root(n + 1), consistency),
          false,
          `from ${m} to ${n + 1}`,
        );
        want(v.verifyConsistency(m, n, root(n), root(m), consistency), false, `from ${m}, roots swapped`);
      }
    }
    return wrong;
  }

  it('sizes 1 to 64: every leaf index and every first size', () => {
    const wrong = Array.from({ length: 64 }, (_, k) => k + 1).flatMap((n) =>
      checkTree(
        n,
        Array.from({ length: n }, (_, i) => i),
      ),
    );
    expect(wrong).toEqual([]);
  });

  it('sizes up to 1,000: the edges, the middle and a spread of indexes', () => {
    const wrong = [100, 127, 128, 129, 255, 256, 257, 511, 512, 513, 777, 1000].flatMap((n) => {
      const spread = Array.from({ length: 16 }, (_, k) => Math.floor((k * n * 7919) / 16) % n);
      return checkTree(n, [...new Set([0, 1, 2, n >> 1, n - 2, n - 1, ...spread])]);
    });
    expect(wrong).toEqual([]);
  });
});

// golang.org/x/mod/sumdb/note (github.com/golang/mod, sumdb/note/note_test.go and example_test.go).
const PETER_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const PETER_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const ENOCH_VKEY = 'EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop'; // the all-zero seed
const PETER_TEXT =
  'If you think cryptography is the answer to your problem,\n' +
  "then you don't know what your problem is.\n";
const PETER_SIG =
  '— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n';
const ENOCH_SIG =
  '— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n';

describe('C2SP signed notes', () => {
  it("verifies the signed-note specification's example (c2sp.org/signed-note)", () => {
    const note =
      'This is an example message.\n\n' +
      '— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n';
    const opened = v.openNote(note, 'example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k');
    expect(opened.text).toBe('This is an example message.\n');
    expect(opened.signatures.map((s) => [s.name, s.keyId.toString('hex')])).toEqual([
      ['example.com/foo', '530d903a'],
    ]);
  });

  it("parses the tlog-checkpoint specification's example (c2sp.org/tlog-checkpoint)", () => {
    const note =
      'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n' +
      '— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n';
    const checkpoint = v.parseCheckpoint(v.parseNote(note).text);
    expect(checkpoint).toEqual({
      origin: 'example.com/behind-the-sofa',
      treeSize: 20852163,
      rootHash: b64('CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I='),
      extensions: [],
    });
  });

  it("verifies Go's note package vectors, and signs as it does from the same seeds", () => {
    const both = `${PETER_TEXT}\n${PETER_SIG}${ENOCH_SIG}`;
    expect(v.openNote(`${PETER_TEXT}\n${PETER_SIG}`, PETER_VKEY).text).toBe(PETER_TEXT);
    expect(v.openNote(both, PETER_VKEY).signatures).toHaveLength(2);
    expect(v.openNote(both, ENOCH_VKEY).text).toBe(PETER_TEXT);
    // Ed25519 is deterministic: the seeds give back the very signature lines.
    const peterSeed = b64(PETER_SKEY.split('+').slice(4).join('+')).subarray(1); // 0x01, then the seed
    expect(noteSigner('PeterNeumann', peterSeed).signature(PETER_TEXT)).toBe(PETER_SIG);
    expect(noteSigner('PeterNeumann', peterSeed).verifierKey).toBe(PETER_VKEY);
    expect(noteSigner('EnochRoot', Buffer.alloc(32)).signature(PETER_TEXT)).toBe(ENOCH_SIG);
    expect(noteSigner('EnochRoot', Buffer.alloc(32)).verifierKey).toBe(ENOCH_VKEY);
    expect(v.keyHash('PeterNeumann', v.parseVerifierKey(PETER_VKEY).publicKey).toString('hex')).toBe(
      'c74f20a3',
    );
  });

  it("refuses Go's bad notes: malformed, another key's, a bad signature", () => {
    const notes = [
      PETER_TEXT,
      `${PETER_TEXT}\n`,
      `${PETER_TEXT}\n${PETER_SIG.slice(0, -1)}`,
      `\x01${PETER_TEXT}\n${PETER_SIG}`,
      `${PETER_TEXT}\n— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=`,
      `${PETER_TEXT}\n${PETER_SIG}Unexpected line.\n`,
    ];
    for (const note of notes) expect(() => v.openNote(note, PETER_VKEY)).toThrow(/malformed note/);
    const notUtf8 = Buffer.concat([Buffer.of(0xff), Buffer.from(`${PETER_TEXT}\n${PETER_SIG}`)]);
    expect(() => v.openNote(notUtf8, PETER_VKEY)).toThrow(/not UTF-8/);
    expect(() =>
      v.openNote(`${PETER_TEXT}\n${PETER_SIG.slice(0, 60)}ABCD${PETER_SIG.slice(60)}`, PETER_VKEY),
    ).toThrow('invalid signature for key PeterNeumann+c74f20a3');
    expect(() =>
      v.openNote(`${PETER_TEXT}\n${PETER_SIG.replace('PeterNeumann', 'CarmenSandiego')}`, PETER_VKEY),
    ).toThrow('the note has no signature by key PeterNeumann+c74f20a3');
    expect(() => v.openNote(`${PETER_TEXT}\n${PETER_SIG.replace('x08g', 'xxxx')}`, PETER_VKEY)).toThrow(
      /no signature by key/,
    );
    expect(() => v.openNote(`${PETER_TEXT}\n${ENOCH_SIG}`, PETER_VKEY)).toThrow(/no signature by key/);
    // A valid signature does not excuse a bad one by the same key.
    const badToo = `${PETER_TEXT}\n${PETER_SIG}${PETER_SIG.replace('x08go/ZJ', 'x08go/ZK')}`;
    expect(() => v.openNote(badToo, PETER_VKEY)).toThrow(/invalid signature/);
  });

  it("refuses every mangling of a verifier key (Go's TestNewVerifier)", () => {
    expect(v.parseVerifierKey(PETER_VKEY)).toMatchObject({ name: 'PeterNeumann', keyId: hex('c74f20a3') });
    const mangled: string[] = [];
    for (let i = 0; i <= PETER_VKEY.length; i++) {
      for (let j = i + 1; j <= PETER_VKEY.length; j++) {
        if (i !== 0 || j !== PETER_VKEY.length) mangled.push(PETER_VKEY.slice(i, j));
      }
    }
    for (let i = 0; i < PETER_VKEY.length; i++) {
      const bytes = Buffer.from(PETER_VKEY);
      bytes[i]++;
      mangled.push(bytes.toString('latin1'));
    }
    // A wrong-length key and an unknown algorithm, each with a key hash adjusted to match.
    mangled.push('PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==');
    mangled.push('PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW');
    const accepted = mangled.filter((key) => {
      try {
        v.parseVerifierKey(key);
        return true;
      } catch {
        return false;
      }
    });
    expect(accepted).toEqual([]);
  });
});

describe('signed checkpoints', () => {
  const signer = noteSigner('vault.example.com/audit', Buffer.alloc(32, 7));
  const root = v.rootFromLeaves([v.leafHash(Buffer.from('a')), v.leafHash(Buffer.from('b'))]);
  const body = `vault.example.com/audit/t1\n2\n${root.toString('base64')}\n`;

  it('verifies a checkpoint signed with a key made from a fixed seed, and returns it', () => {
    expect(v.verifyNote(signer.sign(body), signer.verifierKey)).toEqual({
      origin: 'vault.example.com/audit/t1',
      treeSize: 2,
      rootHash: root,
      extensions: [],
    });
    expect(
      v.verifyNote(Buffer.from(signer.sign(body)), v.parseVerifierKey(signer.verifierKey)).treeSize,
    ).toBe(2);
  });

  it('refuses a changed byte anywhere in the note, a wrong key name and a wrong key hash', () => {
    const note = signer.sign(body);
    for (let i = 0; i < note.length; i++) {
      const changed = `${note.slice(0, i)}${note[i] === 'A' ? 'B' : 'A'}${note.slice(i + 1)}`;
      expect(() => v.verifyNote(changed, signer.verifierKey)).toThrow();
    }
    const otherName = `${body}\n${signer.signature(body, 'vault.example.org/audit')}`;
    expect(() => v.verifyNote(otherName, signer.verifierKey)).toThrow(
      /no signature by key vault.example.com\/audit/,
    );
    const otherHash = `${body}\n${signer.signature(body, 'vault.example.com/audit', hex('00000000'))}`;
    expect(() => v.verifyNote(otherHash, signer.verifierKey)).toThrow(/no signature by key/);
    const [name, , key] = signer.verifierKey.split('+');
    expect(() => v.verifyNote(note, `${name}+00000000+${key}`)).toThrow(/key hash is not the key hash/);
    expect(() =>
      v.verifyNote(note, noteSigner('vault.example.com/audit', Buffer.alloc(32, 8)).verifierKey),
    ).toThrow(/no signature by key/);
  });

  it('refuses a malformed checkpoint body, however well signed', () => {
    const bodies = [
      `vault.example.com/audit/t1\n02\n${root.toString('base64')}\n`,
      `vault.example.com/audit/t1\n-2\n${root.toString('base64')}\n`,
      `vault.example.com/audit/t1\n2\n`,
      `vault.example.com/audit/t1\n2\n${root.subarray(1).toString('base64')}\n`,
      `vault.example.com/audit/t1\n2\n${root.toString('base64url')}\n`,
      `\n2\n${root.toString('base64')}\n`,
    ];
    for (const bad of bodies)
      expect(() => v.verifyNote(signer.sign(bad), signer.verifierKey)).toThrow(/malformed/);
    const extended = `${body}an extension\n`;
    expect(v.verifyNote(signer.sign(extended), signer.verifierKey).extensions).toEqual(['an extension']);
  });

  it("reads the service's time line, when it signed the checkpoint; a checkpoint without one has no time", () => {
    const timed = v.verifyNote(signer.sign(`${body}time 1795896737\n`), signer.verifierKey);
    expect(timed).toEqual({
      origin: 'vault.example.com/audit/t1',
      treeSize: 2,
      rootHash: root,
      extensions: ['time 1795896737'],
      time: 1795896737,
    });
    expect(v.verifyNote(signer.sign(body), signer.verifierKey).time).toBeUndefined();
    for (const bad of ['time\n', 'time 01\n', 'time -1\n', 'time 1e9\n', 'time 1\ntime 2\n'])
      expect(() => v.verifyNote(signer.sign(`${body}${bad}`), signer.verifierKey)).toThrow(
        /malformed checkpoint: (the time line|more than one time line)/,
      );
  });
});

// The worked example of docs/audit-verification.md: every number there is checked here.
describe('the worked example of docs/audit-verification.md', () => {
  const tenant = '8d6c2f1e-5b4a-4c3d-9e2f-1a0b9c8d7e6f';
  const token = {
    actor_type: 'application',
    entity_type: 'token',
    entity_id: '9e8d7c6b-5a49-4382-8716-05f4e3d2c1b0',
  };
  const rows = [
    {
      id: '01f4a2b3-c4d5-4e6f-8a7b-9c0d1e2f3a4b',
      tenant_id: tenant,
      actor_id: '4f3e2d1c-0b9a-4876-9543-210fedcba987',
      ...token,
      operation: 'create',
      message: 'Token created (card)',
      created_at: '2026-11-26T17:01:02.345Z',
    },
    {
      id: '02f4a2b3-c4d5-4e6f-8a7b-9c0d1e2f3a4b',
      tenant_id: tenant,
      actor_id: '4f3e2d1c-0b9a-4876-9543-210fedcba987',
      ...token,
      operation: 'update',
      message: 'Token updated',
      created_at: '2026-11-26T17:01:05.120Z',
    },
    {
      id: '03f4a2b3-c4d5-4e6f-8a7b-9c0d1e2f3a4b',
      tenant_id: tenant,
      actor_id: null,
      actor_type: 'system',
      entity_type: 'connection',
      entity_id: '2c3d4e5f-6a7b-4c8d-9e0f-a1b2c3d4e5f6',
      operation: 'update',
      message: 'connection verified: available',
      created_at: '2026-11-26T17:02:00.007Z',
    },
  ];
  const hashes = rows.map((row) => v.logLeafHash(row));
  const signer = noteSigner('vault.example.com/audit', Buffer.alloc(32, 1));

  it('has the leaves, leaf hashes and roots the document shows', () => {
    expect(v.canonicalJson(rows[2])).toBe(
      '{"actor_id":null,"actor_type":"system","created_at":"2026-11-26T17:02:00.007Z",' +
        '"entity_id":"2c3d4e5f-6a7b-4c8d-9e0f-a1b2c3d4e5f6","entity_type":"connection",' +
        '"id":"03f4a2b3-c4d5-4e6f-8a7b-9c0d1e2f3a4b","message":"connection verified: available",' +
        '"operation":"update","tenant_id":"8d6c2f1e-5b4a-4c3d-9e2f-1a0b9c8d7e6f"}',
    );
    expect(toHex(hashes)).toEqual([
      'f6fd1e9d5a0e99eb2bed7fa4a166f28f90566ff6d9ad6f5fad0bd69e3af993fb',
      '8af244b8b828c22ef3c5d111ac06ad918978a6cf58170a2e2e9c7567dfea7288',
      '93d3e444f609c474dc38b009e9103af62fb1f386d6ccb705f4ac2dec8b70eef7',
    ]);
    const roots = [1, 2, 3].map((n) => v.rootFromLeaves(hashes.slice(0, n)));
    expect(toHex(roots)).toEqual([
      'f6fd1e9d5a0e99eb2bed7fa4a166f28f90566ff6d9ad6f5fad0bd69e3af993fb',
      'd67e46d4cdd243198b0639e11418ef5394b4bf685bf00d35f139e00b18d190bc',
      'e6d0fcc50b23ed28e72c77452c10bb2d0622a923731f4e7e0e9f8899876db078',
    ]);
    expect(roots.map((r) => r.toString('base64'))).toEqual([
      '9v0enVoOmesr7X+koWbyj5BWb/bZrW9frQvWnjr5k/s=',
      '1n5G1M3SQxmLBjnhFBjvU5S0v2hb8A018TngCxjRkLw=',
      '5tD8xQsj7SjnLHdFLBC7LQYiqSNzH05+Dp+ImYdtsHg=',
    ]);
  });

  it('has the inclusion proof of leaf 1 and the consistency proof from 2 to 3 the document shows', () => {
    const inclusion = v.inclusionProof(hashes, 1, 3);
    expect(inclusion.map((p) => p.toString('base64'))).toEqual([
      '9v0enVoOmesr7X+koWbyj5BWb/bZrW9frQvWnjr5k/s=',
      'k9PkRPYJxHTcOLAJ6RA69i+x84bWzLcF9Kwt7Itw7vc=',
    ]);
    expect(v.verifyInclusion(hashes[1], 1, 3, inclusion, v.rootFromLeaves(hashes))).toBe(true);
    const consistency = v.consistencyProof(hashes, 2, 3);
    expect(consistency.map((p) => p.toString('base64'))).toEqual([
      'k9PkRPYJxHTcOLAJ6RA69i+x84bWzLcF9Kwt7Itw7vc=',
    ]);
    const [root2, root3] = [v.rootFromLeaves(hashes.slice(0, 2)), v.rootFromLeaves(hashes)];
    expect(v.verifyConsistency(2, 3, root2, root3, consistency)).toBe(true);
  });

  it('has the key, the verifier key and the signed notes the document shows', () => {
    expect(signer.publicKey.toString('hex')).toBe(
      '8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c',
    );
    expect(signer.keyId.toString('hex')).toBe('a8410f28');
    expect(signer.verifierKey).toBe(
      'vault.example.com/audit+a8410f28+AYqI4910CfGV/VLbLTy6XXLKZwm/HZQSG/N0iAG0D29c',
    );
    const note2 =
      `vault.example.com/audit/${tenant}\n2\n1n5G1M3SQxmLBjnhFBjvU5S0v2hb8A018TngCxjRkLw=\ntime 1795712470\n\n` +
      '— vault.example.com/audit qEEPKFLIAh5VmIxerLQAxauNCTSKjyp3kdvhIKpDMtM68LxO+nX+eyxpbLPbmax0fGDyxA6xvKFC1kDqdL9E7P5TMQ4=\n';
    const note3 =
      `vault.example.com/audit/${tenant}\n3\n5tD8xQsj7SjnLHdFLBC7LQYiqSNzH05+Dp+ImYdtsHg=\ntime 1795712525\n\n` +
      '— vault.example.com/audit qEEPKOjRhD/F5LAUo+4w8g4yWF8L0m8NGDSGVMVC8u4A7FW1ysY4gy0Z0h+1rEtwJhDWIQ8/lwR3+jRwZxifqdCoqAY=\n';
    expect(signer.sign(v.parseNote(note2).text)).toBe(note2);
    expect(signer.sign(v.parseNote(note3).text)).toBe(note3);
    expect(v.verifyNote(note3, signer.verifierKey)).toMatchObject({
      treeSize: 3,
      rootHash: v.rootFromLeaves(hashes),
      time: Date.parse('2026-11-26T17:02:05Z') / 1000,
    });
    // The same checkpoint as signed before the time line was added still verifies, without a time.
    const untimed =
      `vault.example.com/audit/${tenant}\n3\n5tD8xQsj7SjnLHdFLBC7LQYiqSNzH05+Dp+ImYdtsHg=\n\n` +
      '— vault.example.com/audit qEEPKKo5m+YeB82KER4ePv/pIlpcsgtAnUsQjgNql6ZFHOJoEKK/uTVMSAlF0ALe3sU0Zc1srd5bVYzF8gcyfY+utwM=\n';
    expect(signer.sign(v.parseNote(untimed).text)).toBe(untimed);
    expect(v.verifyNote(untimed, signer.verifierKey)).toEqual({
      origin: `vault.example.com/audit/${tenant}`,
      treeSize: 3,
      rootHash: v.rootFromLeaves(hashes),
      extensions: [],
    });
  });

  it('is the example the document shows, value for value', () => {
    const doc = fs.readFileSync(path.join(__dirname, '../../docs/audit-verification.md'), 'utf8');
    const roots = [1, 2, 3].map((n) => v.rootFromLeaves(hashes.slice(0, n)));
    const signedAt = { 2: '2026-11-26T17:01:10Z', 3: '2026-11-26T17:02:05Z' } as Record<number, string>;
    const notes = [2, 3].map((n) =>
      signer.sign(
        `vault.example.com/audit/${tenant}\n${n}\n${roots[n - 1].toString('base64')}\ntime ${Date.parse(signedAt[n]) / 1000}\n`,
      ),
    );
    const computed = [
      ...[...hashes, ...roots, signer.publicKey].flatMap((h) => [h.toString('hex'), h.toString('base64')]),
      ...[...v.inclusionProof(hashes, 1, 3), ...v.consistencyProof(hashes, 2, 3)].map((h) =>
        h.toString('base64'),
      ),
      signer.verifierKey,
      ...notes,
    ];
    rows.forEach((row, i) => expect(doc).toContain(`${i}: ${v.canonicalJson(row)}\n`));
    for (const note of notes) expect(doc).toContain(note);
    // Every hash, key and signature the document shows is one computed here.
    const shown =
      doc.match(
        /\b[0-9a-f]{64}\b|[A-Za-z0-9+/]{43}=|[A-Za-z0-9+/]{86,}={0,2}|(?<![\w-])[0-9a-f]{8}(?![\w-])/g,
      ) ?? [];
    const unknown = shown.filter((token) => !computed.some((value) => value.includes(token)));
    expect(unknown).toEqual([]);
    expect(shown.length).toBeGreaterThan(15);
  });
});

// ---------------------------------------------------------------------------------------------------------
// The program, against a fake service that answers as the real one does
// ---------------------------------------------------------------------------------------------------------

type Log = {
  id: string;
  tenant_id: string;
  actor_id: string | null;
  actor_type: string;
  entity_type: string;
  entity_id: string | null;
  operation: string;
  message: string;
  created_at: string;
};

const TENANT = '6a1f0e2d-3c4b-4a59-8e7d-6c5b4a392817';
const API_KEY = 'key_test_log_read';
const fakeSigner = noteSigner('vault.example.com/audit', Buffer.alloc(32, 1));

/** n rows of the tenant, in the order they were written. */
const makeRows = (n: number, message = (i: number) => `Token created (card) ${i}`): Log[] =>
  Array.from({ length: n }, (_, i) => ({
    id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    tenant_id: TENANT,
    actor_id: i % 3 === 0 ? null : '4f3e2d1c-0b9a-4876-9543-210fedcba987',
    actor_type: i % 3 === 0 ? 'system' : 'application',
    entity_type: 'token',
    entity_id: `tok_${i}`,
    operation: 'create',
    message: message(i),
    created_at: new Date(Date.UTC(2026, 10, 26, 17, 0, i)).toISOString(),
  }));

/** A signed checkpoint of the first `size` rows, with the service's time line (when it was signed). */
const checkpointNote = (rows: Log[], size: number): string =>
  fakeSigner.sign(
    `vault.example.com/audit/${TENANT}\n${size}\n${v.rootFromLeaves(rows.slice(0, size).map((r) => v.logLeafHash(r))).toString('base64')}\ntime ${1795712700 + size}\n`,
  );

interface FakeService {
  rows: Log[];
  /** The checkpointed sizes. */
  checkpoints: number[];
  /** What GET /logs/checkpoint answers, when not the largest checkpoint. */
  latest?: number;
  /** Rows as the service shows them (to lie about them). */
  shown?: (row: Log, index: number) => Log;
  /** Leaf indexes as the proofs give them (to lie about them). */
  leafIndex?: (index: number) => number;
  /** The checkpoint's JSON, to lie about it. */
  checkpointJson?: (json: Record<string, unknown>) => Record<string, unknown>;
  /** The most rows a page holds. */
  maxPage?: number;
}

/** Where the fake service answers; a request anywhere else fails as an unreachable address does. */
const SERVICE_URL = 'http://vault.test';

/**
 * The fake service, answering the program's `fetch` in place of the global one until `close`. The
 * program's requests are all GETs with its headers; the socket under them is Node's, not the program's.
 */
function serve(fake: FakeService): { url: string; close: () => void } {
  const hashes = fake.rows.map((row) => v.logLeafHash(row));
  const shown = (i: number) => (fake.shown ?? ((row) => row))(fake.rows[i], i);
  const largest = Math.max(...fake.checkpoints);
  const answer = (url: URL, headers: Headers): Response => {
    const send = (status: number, body: unknown) =>
      new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
    const problem = (status: number, code: string, detail: string) => send(status, { status, code, detail });
    if (headers.get('bt-api-key') !== API_KEY) return problem(401, 'unauthenticated', 'no key');
    const q = (name: string) => url.searchParams.get(name);
    const proof = /^\/logs\/([^/]+)\/proof$/.exec(url.pathname);
    if (url.pathname === '/logs/checkpoint') {
      const size = fake.latest ?? largest;
      const note = checkpointNote(fake.rows, size);
      const json = {
        origin: `vault.example.com/audit/${TENANT}`,
        tree_size: size,
        root_hash: v.parseCheckpoint(v.parseNote(note).text).rootHash.toString('base64'),
        created_at: '2026-11-26T17:05:00.000Z',
        note,
      };
      return send(200, fake.checkpointJson ? fake.checkpointJson(json) : json);
    }
    if (url.pathname === '/logs/checkpoint/keys') {
      const [name, keyId] = fakeSigner.verifierKey.split('+');
      return send(200, [
        {
          name,
          key_id: keyId,
          public_key: fakeSigner.publicKey.toString('base64'),
          verifier_key: fakeSigner.verifierKey,
          created_at: '2026-01-01T00:00:00.000Z',
        },
      ]);
    }
    if (url.pathname === '/logs/consistency') {
      const [first, second] = [Number(q('first')), Number(q('second'))];
      if (!fake.checkpoints.includes(first) || first >= second)
        return problem(400, 'validation_failed', 'first');
      if (!fake.checkpoints.includes(second)) return problem(400, 'validation_failed', 'second');
      const path = v.consistencyProof(hashes, first, second).map((p) => p.toString('base64'));
      return send(200, { first, second, consistency_path: path });
    }
    if (proof) {
      const index = fake.rows.findIndex((row) => row.id === decodeURIComponent(proof[1]));
      if (index < 0) return problem(404, 'not_found', 'no such log');
      if (index >= largest) return problem(409, 'not_yet_checkpointed', 'not yet in a checkpoint');
      const size = q('tree_size') === null ? largest : Number(q('tree_size'));
      if (!fake.checkpoints.includes(size) || index >= size)
        return problem(400, 'validation_failed', 'tree_size');
      const path = v.inclusionProof(hashes, index, size).map((p) => p.toString('base64'));
      const leafIndex = (fake.leafIndex ?? ((i) => i))(index);
      return send(200, { log: shown(index), leaf_index: leafIndex, tree_size: size, inclusion_path: path });
    }
    if (url.pathname === '/logs') {
      const newestFirst = fake.rows.map((_, i) => shown(i)).reverse();
      const from = Number(q('start') ?? 0);
      const size = Math.min(Number(q('size') ?? 20), fake.maxPage ?? 100);
      const data = newestFirst.slice(from, from + size);
      const after = from + size < newestFirst.length ? { after: String(from + size) } : {};
      return send(200, { pagination: { page_size: size, ...after }, data });
    }
    return problem(404, 'not_found', url.pathname);
  };
  const fetch = jest.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.origin !== SERVICE_URL) {
      // As undici reports an address nobody listens on.
      const refused = Object.assign(new Error(`connect ECONNREFUSED ${url.host}`), { code: 'ECONNREFUSED' });
      throw new TypeError('fetch failed', { cause: refused });
    }
    return answer(url, new Headers(init?.headers));
  });
  return { url: SERVICE_URL, close: () => fetch.mockRestore() };
}

describe('the program, against a fake service', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'verify-audit-'));
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

  /** Runs the checks against a fake service; the report and the lines printed. */
  async function check(
    fake: FakeService,
    options: { checkpoint?: string; verifierKey?: string; limit?: number } = {},
  ) {
    const service = serve(fake);
    const lines: string[] = [];
    try {
      const report = await v.run(
        { url: service.url, key: API_KEY, limit: 100, verifierKey: fakeSigner.verifierKey, ...options },
        (line) => lines.push(line),
      );
      return { ...report, lines };
    } finally {
      service.close();
    }
  }
  const save = (name: string, note: string) => {
    const file = path.join(tmp, name);
    fs.writeFileSync(file, note);
    return file;
  };
  const failures = (lines: string[]) => lines.filter((line) => line.startsWith('FAIL'));

  it('passes an honest log: the signature, each checkpointed row, and skips the rows not yet checkpointed', async () => {
    const r = await check({ rows: makeRows(10), checkpoints: [4, 7] });
    expect(failures(r.lines)).toEqual([]);
    expect(r).toMatchObject({ passed: 2 + 7, failed: 0, skipped: 3, rows: 10 });
    expect(r.lines).toContain('ok   row 00000000-0000-4000-8000-000000000006 is leaf 6 of 7');
    expect(r.lines).toContain('skip row 00000000-0000-4000-8000-000000000009: not yet in a checkpoint');
  });

  it('trusts the keys the service lists only when given no verifier key, and says so', async () => {
    const r = await check({ rows: makeRows(5), checkpoints: [5] }, { verifierKey: undefined });
    expect(failures(r.lines)).toEqual([]);
    expect(r.lines[0]).toMatch(/^warn no --verifier-key/);
    expect(r.lines).toContain(`ok   listed key ${fakeSigner.verifierKey}`);
    expect(r.lines).toContain(`ok   the latest checkpoint: signed by ${fakeSigner.verifierKey.slice(0, 32)}`);
  });

  it('proves the log consistent with a checkpoint kept earlier, of a smaller or the same size', async () => {
    const rows = makeRows(10);
    const older = await check(
      { rows, checkpoints: [4, 7] },
      { checkpoint: save('4.txt', checkpointNote(rows, 4)) },
    );
    expect(failures(older.lines)).toEqual([]);
    expect(older.lines).toContain(
      'ok   the log at size 7 extends the saved checkpoint at size 4 (consistency proof)',
    );
    const same = await check(
      { rows, checkpoints: [4, 7] },
      { checkpoint: save('7.txt', checkpointNote(rows, 7)) },
    );
    expect(failures(same.lines)).toEqual([]);
    expect(same.lines).toContain(
      'ok   the log at size 7 extends the saved checkpoint at size 7 (same size, same root)',
    );
  });

  it('reads a saved checkpoint with one extra newline at its end (as `jq -r .note > file` saves it), and says what is wrong with more', async () => {
    const rows = makeRows(10);
    const note = checkpointNote(rows, 4);
    const one = await check({ rows, checkpoints: [4, 7] }, { checkpoint: save('jq.txt', `${note}\n`) });
    expect(failures(one.lines)).toEqual([]);
    expect(one.lines).toContain(
      'ok   the log at size 7 extends the saved checkpoint at size 4 (consistency proof)',
    );
    const two = await check({ rows, checkpoints: [4, 7] }, { checkpoint: save('two.txt', `${note}\n\n`) });
    expect(failures(two.lines)).toEqual([
      "FAIL the saved checkpoint: malformed note: the file ends with 2 newlines after the note's last line, where one extra newline is accepted",
    ]);
    // The note itself ends with its last signature line: given whole, an extra newline is named as such.
    expect(() => v.parseNote(`${note}\n`)).toThrow(
      'malformed note: it ends with an empty line, not with a signature line',
    );
    expect(v.noteFromFile(Buffer.from(note))).toEqual(Buffer.from(note));
  });

  it('finds a history rewritten since a kept checkpoint, even with every hash recomputed', async () => {
    const rows = makeRows(10);
    const before = makeRows(10, (i) => (i === 2 ? 'Token deleted' : `Token created (card) ${i}`));
    const saved = save('forked.txt', checkpointNote(before, 4));
    const r = await check({ rows, checkpoints: [4, 7] }, { checkpoint: saved });
    expect(failures(r.lines)).toEqual([
      'FAIL the log at size 7 extends the saved checkpoint at size 4 (consistency proof)',
    ]);
    const larger = await check(
      { rows, checkpoints: [4, 7] },
      { checkpoint: save('9.txt', checkpointNote(rows, 9)) },
    );
    expect(failures(larger.lines)).toEqual([
      'FAIL the log at size 7 extends the saved checkpoint at size 9: the saved checkpoint is larger than the latest',
    ]);
  });

  it('finds a row shown other than it was written, and a row moved to another leaf', async () => {
    const changed = await check({
      rows: makeRows(6),
      checkpoints: [6],
      shown: (row, i) => (i === 2 ? { ...row, message: 'nothing happened' } : row),
    });
    expect(failures(changed.lines)).toEqual([
      'FAIL row 00000000-0000-4000-8000-000000000002 is leaf 2 of 6; the inclusion proof does not verify',
    ]);
    const swapped = await check({
      rows: makeRows(6),
      checkpoints: [6],
      leafIndex: (i) => [0, 1, 3, 2, 4, 5][i],
    });
    expect(failures(swapped.lines)).toEqual([
      'FAIL row 00000000-0000-4000-8000-000000000003 is leaf 2 of 6; the inclusion proof does not verify',
      'FAIL row 00000000-0000-4000-8000-000000000002 is leaf 3 of 6; the inclusion proof does not verify',
    ]);
  });

  it('refuses a checkpoint signed by another key, or whose JSON is not its note', async () => {
    const other = noteSigner('vault.example.com/audit', Buffer.alloc(32, 2)).verifierKey;
    const r = await check({ rows: makeRows(3), checkpoints: [3] }, { verifierKey: other });
    expect(r.lines).toEqual(['FAIL the latest checkpoint: not signed by a trusted key']);
    const lying = await check({
      rows: makeRows(3),
      checkpoints: [3],
      checkpointJson: (json) => ({ ...json, tree_size: 4 }),
    });
    expect(failures(lying.lines)).toEqual([
      `FAIL the latest checkpoint's origin, tree_size and root_hash are its note's (vault.example.com/audit/${TENANT}, size 3)`,
    ]);
  });

  it('skips rows in a checkpoint newer than the one it read', async () => {
    const r = await check({ rows: makeRows(10), checkpoints: [4, 7, 9], latest: 7 });
    expect(failures(r.lines)).toEqual([]);
    expect(r).toMatchObject({ passed: 2 + 7, skipped: 3 });
    expect(r.lines).toContain(
      'skip row 00000000-0000-4000-8000-000000000008: in a checkpoint newer than size 7',
    );
  });

  it('pages through GET /logs up to the limit', async () => {
    const r = await check({ rows: makeRows(30), checkpoints: [30], maxPage: 4 }, { limit: 11 });
    expect(r).toMatchObject({ rows: 11, passed: 2 + 11, failed: 0 });
  });

  it('exits 0 when every check passes and 1 otherwise', async () => {
    const out = jest.spyOn(console, 'log').mockImplementation(() => undefined);
    const err = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      const service = serve({ rows: makeRows(3), checkpoints: [3] });
      try {
        const args = ['--url', service.url, '--key', API_KEY, '--verifier-key', fakeSigner.verifierKey];
        expect(await v.main(args)).toBe(0);
        expect(out).toHaveBeenLastCalledWith(
          '5 passed, 0 failed, 0 rows skipped (not yet checkpointed); 3 rows read',
        );
        expect(await v.main(['--url', service.url, '--key', 'wrong'])).toBe(1);
        // An address nobody answers on (the fake refuses it).
        expect(await v.main(['--url', 'http://127.0.0.1:1', '--key', API_KEY])).toBe(1);
      } finally {
        service.close();
      }
      expect(await v.main(['--key', API_KEY])).toBe(1);
      expect(err).toHaveBeenCalledWith(expect.stringMatching(/^usage: /));
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
  });
});
