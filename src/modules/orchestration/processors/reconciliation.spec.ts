import { randomUUID } from 'node:crypto';
import { fromReconciliationId, toReconciliationId } from './reconciliation';

describe('reconciliation id', () => {
  it('is the uuid as a base62 integer and decodes back', () => {
    for (let i = 0; i < 200; i++) {
      const id = randomUUID();
      const encoded = toReconciliationId(id);
      expect(encoded).toMatch(/^[0-9A-Za-z]{1,22}$/);
      expect(fromReconciliationId(encoded)).toBe(id);
      expect(BigInt(`0x${id.replace(/-/g, '')}`).toString()).toBe(
        [...encoded]
          .reduce(
            (n, c) =>
              n * 62n + BigInt('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'.indexOf(c)),
            0n,
          )
          .toString(),
      );
    }
  });

  it('has no padding for uuids with leading zero bytes', () => {
    const id = '0000000a-0000-4000-8000-000000000001';
    const encoded = toReconciliationId(id);
    expect(encoded.startsWith('0')).toBe(false);
    expect(fromReconciliationId(encoded)).toBe(id);
    expect(toReconciliationId('00000000-0000-0000-0000-000000000000')).toBe('0');
  });
});
