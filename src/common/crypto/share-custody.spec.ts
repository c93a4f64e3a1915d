import { randomBytes } from 'node:crypto';
import { split } from 'shamir-secret-sharing';
import { checkValue } from './key-encryption-key';
import type { MasterKeyCheck } from './master-key-checks.repository';
import { openShares, ShareCollector } from './share-custody';
import { checkLabel, parseShare, type Share, shareLine } from './shares';

/** A key split 2 of 3 under `version`, with the check its ceremony would record and its share lines. */
async function ceremony(version: string) {
  const key = randomBytes(32);
  const check: MasterKeyCheck = {
    version,
    checkValue: checkValue(key),
    provider: 'split',
    threshold: 2,
    shares: 3,
  };
  const parts = await split(new Uint8Array(key), 3, 2);
  const lines = parts.map((payload, i) =>
    shareLine({ version, check: checkLabel(check.checkValue), index: i + 1, payload: Buffer.from(payload) }),
  );
  return { key, check, lines };
}

const share = (line: string) => parseShare(line) as Share;

describe('openShares', () => {
  it('answers the key when the shares open the recorded one, and overwrites their payloads', async () => {
    const { key, check, lines } = await ceremony('v1');
    const shares = [share(lines[0]), share(lines[2])];
    expect(await openShares(shares, check)).toEqual(key);
    for (const s of shares) expect(s.payload.every((b) => b === 0)).toBe(true);
  });

  it('answers nothing for shares that do not open it (one forged, or of another key)', async () => {
    const { check, lines } = await ceremony('v1');
    const forged = share(lines[1]);
    forged.payload[3] ^= 1;
    expect(await openShares([share(lines[0]), forged], check)).toBeUndefined();
    const other = await ceremony('v1');
    expect(await openShares([share(other.lines[0]), share(other.lines[1])], check)).toBeUndefined();
    expect(await openShares([share(lines[0])], check)).toBeUndefined();
  });
});

describe('ShareCollector', () => {
  it('collects several versions, refuses by name without counting, hands out copies of the keys', async () => {
    const v1 = await ceremony('v1');
    const v2 = await ceremony('v2');
    const collector = new ShareCollector([v1.check, v2.check]);
    expect(collector.collecting?.version).toBe('v1');
    expect(collector.offer('vault-share-v1:v1:nope')).toMatchObject({ refused: 'corrupted' });
    const relabelled = shareLine({ ...share(v1.lines[0]), check: 'a'.repeat(16) });
    expect(collector.offer(relabelled)).toMatchObject({ refused: 'another key', index: 1, version: 'v1' });
    const v3 = await ceremony('v3');
    expect(collector.offer(v3.lines[0])).toMatchObject({ refused: 'another key', version: 'v3' });

    // A share of the later version counts while the earlier is collected.
    expect(collector.offer(v2.lines[1])).toMatchObject({ progress: 1, full: false });
    expect(collector.offer(v1.lines[0])).toMatchObject({ progress: 1, full: false });
    expect(collector.offer(v1.lines[0])).toMatchObject({ refused: 'already entered', index: 1 });
    expect(collector.progress('v1')).toBe(1);
    const full = collector.offer(v1.lines[2]);
    expect(full).toMatchObject({ progress: 2, full: true });
    expect(await collector.open(v1.check)).toEqual({ indexes: [1, 3], opened: true });
    expect(collector.offer(v1.lines[1])).toMatchObject({ refused: 'already entered', version: 'v1' });
    expect(collector.collecting?.version).toBe('v2');
    collector.offer(v2.lines[0]);
    expect(await collector.open(v2.check)).toEqual({ indexes: [1, 2], opened: true });
    expect(collector.collecting).toBeUndefined();

    const keys = collector.keys();
    expect(keys.map((k) => k.version)).toEqual(['v1', 'v2']);
    expect(keys[0].key).toEqual(v1.key);
    expect(keys[1].key).toEqual(v2.key);
    collector.forget();
    expect(keys[1].key).toEqual(v2.key); // copies: forgetting overwrites the collector's own
    expect(collector.keys()).toEqual([]);
  });

  it('forgets the shares of a version they do not open; the right ones still open it', async () => {
    const v1 = await ceremony('v1');
    const collector = new ShareCollector([v1.check]);
    const forged = share(v1.lines[1]);
    forged.payload[0] ^= 0xff;
    collector.offer(v1.lines[0]);
    collector.offer(shareLine(forged));
    expect(await collector.open(v1.check)).toEqual({ indexes: [1, 2], opened: false });
    expect(collector.progress('v1')).toBe(0);
    collector.offer(v1.lines[1]);
    collector.offer(v1.lines[2]);
    expect((await collector.open(v1.check)).opened).toBe(true);
  });
});
