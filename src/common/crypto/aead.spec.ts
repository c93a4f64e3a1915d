import { randomBytes } from 'node:crypto';
import { DecryptionError, open, seal } from './aead';

describe('AES-256-GCM sealing', () => {
  const key = randomBytes(32);
  const aad = 'tenant-a:token-1:data';

  it('round-trips and uses a fresh IV per value', () => {
    const a = seal(key, Buffer.from('4242424242424242'), aad);
    const b = seal(key, Buffer.from('4242424242424242'), aad);
    expect(a.equals(b)).toBe(false);
    expect(open(key, a, aad).toString()).toBe('4242424242424242');
  });

  it('fails on a tampered ciphertext, a wrong key, or another row (AAD)', () => {
    const sealed = seal(key, Buffer.from('secret'), aad);
    const tampered = Buffer.from(sealed);
    tampered[14] ^= 1;
    expect(() => open(key, tampered, aad)).toThrow(DecryptionError);
    expect(() => open(randomBytes(32), sealed, aad)).toThrow(DecryptionError);
    expect(() => open(key, sealed, 'tenant-a:token-2:data')).toThrow(DecryptionError);
    expect(() => open(key, sealed.subarray(0, 10), aad)).toThrow(DecryptionError);
  });
});
