import { randomUUID } from 'node:crypto';
import {
  openServiceDatabase,
  principalOf,
  type ServiceDatabase,
} from '../../../../test/support/service-database';
import type { Principal } from '../../../common/auth/principal';
import { hmacBase62, type TenantKeys } from '../../../common/crypto/tenant-keys.service';
import type { Metrics } from '../../../common/metrics/metrics';
import type { AppConfig } from '../../../config/app-config';
import { CardEnumerationRepository } from './card-enumeration.repository';
import { CardEnumerationGuard, CardEnumerationRefused } from './card-enumeration.service';

/**
 * The card enumeration guard on its real repository (the service tier's PGlite): what it counts in the
 * caller's change (`card_enumeration_counts`), that a refusal leaves nothing counted, and the audit row of
 * a refusal.
 */
let db: ServiceDatabase;
let tenant: string;
let who: Principal;
const KEYS = { fingerprint: Buffer.alloc(32, 3) } as TenantKeys;

beforeAll(async () => {
  db = await openServiceDatabase();
  tenant = await db.newTenant('enumeration');
});
afterAll(() => db.close());
beforeEach(async () => {
  // A caller of its own per test: counts are per caller and group.
  who = principalOf(tenant, ['token:create', 'token:read']);
  await db.rows('DELETE FROM card_enumeration_counts; DELETE FROM audit_logs;');
});

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

function newGuard(limit = 10) {
  let refusals = 0;
  const metrics = { cardEnumerationRefused: () => void refusals++ } as unknown as Metrics;
  const guard = new CardEnumerationGuard(
    new CardEnumerationRepository(),
    db.work,
    metrics,
    { CARD_ENUMERATION_LIMIT: limit } as AppConfig,
    db.tenantKeys,
    db.clock,
  );
  /** Counts `numbers` in a transaction of the caller's, as tokenize does. */
  const count = (numbers: string[]) =>
    db.work.transaction({ actor: who }, (change) => guard.count(change, who, KEYS, numbers, db.clock.now()));
  return { guard, count, refusals: () => refusals };
}

const counted = async () =>
  Number((await db.rows<{ n: string }>('SELECT count(*) AS n FROM card_enumeration_counts'))[0].n);

describe('CardEnumerationGuard (real repository on PGlite)', () => {
  it("records each number it counts, in the caller's change, as digests only", async () => {
    const s = newGuard();
    const numbers = group(10);
    await s.count(numbers);
    expect(await counted()).toBe(10);
    const rows = await db.rows<Record<string, unknown>>('SELECT * FROM card_enumeration_counts');
    expect(JSON.stringify(rows)).not.toContain(numbers[0].slice(6, 12));
    expect(rows.every((row) => row.counted_by === who.applicationId)).toBe(true);
  });

  it('refuses past the limit and records nothing (the change rolls back)', async () => {
    const s = newGuard();
    await s.count(group(5));
    await expect(s.count(group(11))).rejects.toBeInstanceOf(CardEnumerationRefused);
    expect(await counted()).toBe(5);
  });

  it('a number counted before, by the same caller, is not counted twice', async () => {
    const s = newGuard();
    await s.count(group(8));
    await s.count(group(10));
    expect(await counted()).toBe(10);
  });

  it('reads and writes nothing when no number is counted (the one-statement path)', async () => {
    const s = newGuard();
    await db.work.statement({ actor: who }, (change) => s.guard.count(change, who, KEYS, [], db.clock.now()));
    expect(await counted()).toBe(0);
  });

  it('a number stored in a token the caller may read does not count', async () => {
    const s = newGuard();
    const numbers = group(11);
    await db.rows(
      `INSERT INTO tokens (tenant_id, id, type, data, fingerprint, fingerprint_expression, containers, created_at)
       VALUES ($1, $2, 'card', '\\x00', $3, '{{ data.number }}', '{/pci/high/}', now())`,
      [tenant, randomUUID(), hmacBase62(KEYS.fingerprint, numbers[0])],
    );
    await s.count(numbers);
    expect(await counted()).toBe(10);
  });

  it('a refusal is one refuse audit row naming no digits, in a change of its own, and the metric', async () => {
    const s = newGuard();
    await s.guard.refused(who);
    expect(s.refusals()).toBe(1);
    const rows = await db.rows<Record<string, unknown>>(
      'SELECT actor_id, entity_type, entity_id, operation, token_type, message FROM audit_logs',
    );
    expect(rows).toEqual([
      expect.objectContaining({
        actor_id: who.applicationId,
        entity_type: 'token',
        entity_id: null,
        operation: 'refuse',
        token_type: 'card',
      }),
    ]);
    expect(rows[0].message).not.toMatch(/\d/);
  });
});
