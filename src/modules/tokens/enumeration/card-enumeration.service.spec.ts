import { Change } from '../../../common/unit-of-work/change';
import type { Principal } from '../../../common/auth/principal';
import type { TenantKeys, TenantKeysService } from '../../../common/crypto/tenant-keys.service';
import type { Clock } from '../../../common/jobs/clock';
import type { Metrics } from '../../../common/metrics/metrics';
import type { AppConfig } from '../../../config/app-config';
import type { CountedRow, CountedSoFar } from './card-enumeration';
import type { CardEnumerationRepository } from './card-enumeration.repository';
import { CardEnumerationGuard, CardEnumerationRefused } from './card-enumeration.service';
import { FakeUnitOfWork } from '../../../../test/support/fake-unit-of-work';

const KEYS = { fingerprint: Buffer.alloc(32, 3) } as TenantKeys;
const NOW = new Date('2026-11-26T12:00:00Z');
const who: Principal = {
  tenantId: 't1',
  applicationId: '00000000-0000-4000-8000-000000000001',
  applicationType: 'private',
  keyKind: 'application',
  keyId: 'k1',
  authorized: true,
  permissions: ['token:create', 'token:read'],
  rules: [],
} as unknown as Principal;

/** Luhn-valid numbers sharing their first 6 and last 4 digits. */
function group(count: number): string[] {
  const out: string[] = [];
  for (let middle = 0; out.length < count; middle++) {
    const number = `424242${String(middle).padStart(6, '0')}4242`;
    let sum = 0;
    for (let i = 0; i < 16; i++) {
      let d = Number(number[15 - i]);
      if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
      sum += d;
    }
    if (sum % 10 === 0) out.push(number);
  }
  return out;
}

function newGuard(limit = 10, stored: { fingerprint: string; containers: string[] }[] = []) {
  const calls: string[] = [];
  const inserted: CountedRow[] = [];
  const work = new FakeUnitOfWork();
  let refusals = 0;
  const repository = {
    lockGroups: async () => void calls.push('lock'),
    findCounted: async (): Promise<CountedSoFar[]> => {
      calls.push('counted');
      return [];
    },
    findCountedAndStored: async () => {
      calls.push('counted and stored');
      return { counted: [], stored: stored.map((s, i) => ({ id: `tok_${i}`, type: 'card', ...s })) };
    },
    insert: async (_change: Change, _tenant: string, rows: CountedRow[]) => {
      calls.push('insert');
      inserted.push(...rows);
    },
  } as unknown as CardEnumerationRepository;
  const metrics = { cardEnumerationRefused: () => void refusals++ } as unknown as Metrics;
  const guard = new CardEnumerationGuard(
    repository,
    work.asUnitOfWork(),
    metrics,
    { CARD_ENUMERATION_LIMIT: limit } as AppConfig,
    { keysFor: async () => KEYS } as unknown as TenantKeysService,
    { now: () => NOW } as Clock,
  );
  // The caller's change, as the tokenize's transaction hands it (the fake repository ignores it).
  const change = new Change({ actor: who }, 'transaction', undefined, () =>
    Promise.reject(new Error('no database')),
  );
  return { guard, change, work, calls, inserted, refusals: () => refusals };
}

describe('CardEnumerationGuard', () => {
  it('locks the groups before it reads the count, then records the numbers', async () => {
    const s = newGuard();
    await s.guard.count(s.change, who, KEYS, group(10), NOW);
    expect(s.calls).toEqual(['lock', 'counted and stored', 'insert']);
    expect(s.inserted).toHaveLength(10);
  });

  it('refuses past the limit and records nothing', async () => {
    const s = newGuard();
    await expect(s.guard.count(s.change, who, KEYS, group(11), NOW)).rejects.toBeInstanceOf(
      CardEnumerationRefused,
    );
    expect(s.calls).not.toContain('insert');
  });

  it('reads nothing when no number is counted (the one-statement path)', async () => {
    const s = newGuard();
    await s.guard.count(s.change, who, KEYS, [], NOW);
    expect(s.calls).toEqual([]);
  });

  it('a number stored in a token the caller may read does not count', async () => {
    const numbers = group(11);
    const { hmacBase62 } = await import('../../../common/crypto/tenant-keys.service');
    const s = newGuard(10, [
      { fingerprint: hmacBase62(KEYS.fingerprint, numbers[0]), containers: ['/pci/high/'] },
    ]);
    await s.guard.count(s.change, who, KEYS, numbers, NOW);
    expect(s.inserted).toHaveLength(10);
  });

  it('a refusal is one refuse audit row naming no digits, in a change of its own, and the metric', async () => {
    const s = newGuard();
    await s.guard.refused(who);
    expect(s.refusals()).toBe(1);
    expect(s.work.committed).toHaveLength(1);
    expect(s.work.committed[0].origin).toEqual({ actor: who });
    expect(s.work.audit).toEqual([
      expect.objectContaining({
        entityType: 'token',
        entityId: null,
        operation: 'refuse',
        tokenType: 'card',
      }),
    ]);
    expect(s.work.audit[0].message).not.toMatch(/\d/);
  });
});
