import fc from 'fast-check';
import { randomInt } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { RetentionJob } from '../../src/common/jobs/retention.job';
import { newApplication, newTenant, startApp, TestApp, TestTenant } from '../support/app';
import { cardData, luhnValid, tokenize } from '../support/attacker';

/** The guard's limit in these tests (the default). */
const LIMIT = 10;

/** `count` distinct Luhn-valid 16-digit numbers sharing a random first 6 and last 4 digits. */
function groupNumbers(count: number): string[] {
  const bin6 = `4${String(randomInt(100_000)).padStart(5, '0')}`;
  const last4 = String(randomInt(10_000)).padStart(4, '0');
  const out = new Set<string>();
  while (out.size < count) {
    const number = bin6 + String(randomInt(1_000_000)).padStart(6, '0') + last4;
    if (luhnValid(number)) out.add(number);
  }
  return [...out];
}

/** One tokenize of the property: which instance, which reading key, which numbers of the group. */
interface Sent {
  instance: number;
  key: number;
  numbers: number[];
}

/**
 * The card enumeration guard decided in the write (a one-statement tokenize reads the counts, then
 * writes only where no other request counted in the same groups meanwhile): whatever the interleaving,
 * across two instances on one database, the callers that receive fingerprints never get more than the
 * limit of distinct numbers of one group stored, and a refusal writes nothing.
 */
describe('abuse: card enumeration under concurrency', () => {
  let a: TestApp;
  let b: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  const keys: string[] = [];

  beforeAll(async () => {
    [a, b] = await Promise.all([
      startApp({ RATE_LIMIT_PER_MINUTE: '1000000', METRICS_ENABLED: 'true' }),
      startApp({ RATE_LIMIT_PER_MINUTE: '1000000' }),
    ]);
    db = a.app.get(DataSource);
    tenant = await newTenant(a, 'enumeration concurrency');
    for (let i = 0; i < 3; i++)
      keys.push(
        (
          await newApplication(a, tenant.managementKey, {
            type: 'private',
            permissions: ['token:create', 'token:read'],
          })
        ).key,
      );
  });
  afterAll(() => Promise.all([a.close(), b.close()]));

  /** Tokens holding these numbers' fingerprints, as the tenant's tokens table says. */
  const storedNumbers = async (fingerprints: Map<string, string>): Promise<Set<string>> => {
    const rows: { fingerprint: string }[] = await db.query(
      `SELECT DISTINCT fingerprint FROM tokens WHERE tenant_id = $1 AND fingerprint = ANY($2::varchar[])`,
      [tenant.tenantId, [...fingerprints.keys()]],
    );
    return new Set(rows.map((r) => fingerprints.get(r.fingerprint)!));
  };

  it('N concurrent tokenizes over one group, through two instances, never store more than the limit', async () => {
    const seen = { runs: 0, requests: 0, created: 0, refused: 0, storedMax: 0 };
    const sent = fc.array(
      fc.record({
        instance: fc.integer({ min: 0, max: 1 }),
        key: fc.integer({ min: 0, max: 2 }),
        numbers: fc.uniqueArray(fc.integer({ min: 0, max: 24 }), { minLength: 1, maxLength: 3 }),
      }),
      { minLength: 8, maxLength: 40 },
    );
    await fc.assert(
      fc.asyncProperty(sent, async (requests: Sent[]) => {
        const numbers = groupNumbers(25);
        const answers = await Promise.all(
          requests.map((r) =>
            tokenize(
              [a, b][r.instance],
              keys[r.key],
              r.numbers.map((i) => ({ type: 'card', data: cardData(numbers[i]) })),
            ),
          ),
        );
        // Every answer is a decision: created, or refused by the guard; never an error.
        for (const answer of answers) {
          expect([201, 429]).toContain(answer.status);
          if (answer.status === 429) expect(answer.body.code).toBe('card_enumeration_suspected');
        }
        // The fingerprint of each number, from the answers (the keys read what they make).
        const fingerprints = new Map<string, string>();
        answers.forEach((answer, i) => {
          if (answer.status !== 201) return;
          (answer.body as { fingerprint: string }[]).forEach((token, j) =>
            fingerprints.set(token.fingerprint, numbers[requests[i].numbers[j]]),
          );
        });
        const answered = new Set(fingerprints.values());
        const stored = await storedNumbers(fingerprints);
        expect(answered.size).toBeLessThanOrEqual(LIMIT);
        expect(stored).toEqual(answered);
        // A refused request wrote nothing: the tokens are exactly those answered.
        const created = answers.filter((x) => x.status === 201).reduce((n, x) => n + x.body.length, 0);
        const [{ n }] = await db.query(
          `SELECT count(*)::int AS n FROM tokens WHERE tenant_id = $1 AND fingerprint = ANY($2::varchar[])`,
          [tenant.tenantId, [...fingerprints.keys()]],
        );
        expect(n).toBe(created);
        // No refusal where one key asks for at most the limit of distinct numbers, whatever the order.
        const distinct = new Set(requests.flatMap((r) => r.numbers));
        if (new Set(requests.map((r) => r.key)).size === 1 && distinct.size <= LIMIT)
          expect(answers.every((x) => x.status === 201)).toBe(true);
        seen.runs++;
        seen.requests += answers.length;
        seen.created += answers.filter((x) => x.status === 201).length;
        seen.refused += answers.filter((x) => x.status === 429).length;
        seen.storedMax = Math.max(seen.storedMax, stored.size);
      }),
      { numRuns: 12 },
    );
    const metrics = (await request(a.http).get('/metrics').expect(200)).text;
    const conflicts = metrics.split('\n').find((l) => l.startsWith('vault_card_enumeration_conflicts_total'));
    process.stdout.write(
      `${seen.runs} runs, ${seen.requests} concurrent tokenizes: ${seen.created} created, ${seen.refused} refused, ` +
        `at most ${seen.storedMax} distinct numbers of a group stored (limit ${LIMIT}); instance a: ${conflicts}\n`,
    );
  });

  it('the retention job removes a group with its counts, and a later count starts it again', async () => {
    const [number, another] = groupNumbers(2);
    await tokenize(a, keys[0], { type: 'card', data: cardData(number) }).expect(201);
    const groups = async (): Promise<{ version: string }[]> =>
      db.query(`SELECT version FROM card_enumeration_groups WHERE tenant_id = $1`, [tenant.tenantId]);
    const before = await groups();
    expect(before.length).toBeGreaterThan(0);
    await db.query(
      `UPDATE card_enumeration_groups SET counted_at = now() - interval '25 hours' WHERE tenant_id = $1`,
      [tenant.tenantId],
    );
    await db.query(
      `UPDATE card_enumeration_counts SET created_at = now() - interval '25 hours' WHERE tenant_id = $1`,
      [tenant.tenantId],
    );
    await a.app.get(RetentionJob).runNow('card-enumeration-counts');
    expect(await groups()).toHaveLength(0);
    // Counted again under a version never taken before (another number: one stored in a token the key
    // may read is not counted).
    await tokenize(b, keys[1], { type: 'card', data: cardData(another) }).expect(201);
    const after = await groups();
    expect(after).toHaveLength(1);
    const newest = before.map((g) => BigInt(g.version)).reduce((x, y) => (x > y ? x : y));
    expect(BigInt(after[0].version)).toBeGreaterThan(newest);
  });
});
