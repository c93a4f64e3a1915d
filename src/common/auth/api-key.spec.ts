import { generateApiKey, hashApiKey, keyKindOf, sameDigest } from './api-key';

describe('API keys', () => {
  it.each([
    ['public', 'key_pub_'],
    ['private', 'key_pvt_'],
    ['management', 'key_mgt_'],
    ['session', 'key_ses_'],
  ] as const)('generates %s keys as %s<32 random bytes in base62>', (kind, prefix) => {
    const key = generateApiKey(kind);
    expect(key.startsWith(prefix)).toBe(true);
    expect(key.slice(prefix.length)).toMatch(/^[0-9A-Za-z]{42,44}$/);
    expect(keyKindOf(key)).toBe(kind);
  });

  it('never generates the same key twice', () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generateApiKey('private')));
    expect(keys.size).toBe(1000);
  });

  it.each([
    '',
    'key_pvt_',
    'key_abc_' + 'a'.repeat(43),
    'KEY_PVT_' + 'a'.repeat(43),
    'key_pvt_' + 'a'.repeat(43) + '!',
    'Bearer x',
  ])('does not recognise %j as a key', (value) => expect(keyKindOf(value)).toBeUndefined());

  it('hashes with SHA-256 and compares digests', () => {
    const key = generateApiKey('management');
    const digest = hashApiKey(key);
    expect(digest).toHaveLength(32);
    expect(sameDigest(digest, hashApiKey(key))).toBe(true);
    expect(sameDigest(digest, hashApiKey(`${key}x`))).toBe(false);
    expect(sameDigest(digest, Buffer.alloc(16))).toBe(false);
  });
});
