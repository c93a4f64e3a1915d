import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import type { AccessRule } from '../../src/common/auth/access-rule';
import { IdempotencyRepository } from '../../src/modules/idempotency/idempotency.repository';
import { decide } from '../../src/modules/tokens/access/token-access';
import { TokenSearchRepository } from '../../src/modules/tokens/search/token-search.repository';
import { TokenizeService } from '../../src/modules/tokens/tokenize/tokenize.service';
import { MediumContext, principal, startMedium } from './support';

const CONTAINERS = ['/', '/pci/', '/pci/high/', '/pci/low/', '/general/', '/general/eu/'];
const TYPES = ['card', 'token', 'bank'] as const;

describe('the vault on PostgreSQL (no HTTP)', () => {
  let m: MediumContext;
  let tenant: string;
  const tokens: { id: string; type: string; containers: string[] }[] = [];

  beforeAll(async () => {
    m = await startMedium();
    tenant = await m.newTenant();
    const who = principal(tenant, ['token:create']);
    // Two tokens of every type in every container but the root (tokens cannot be stored at `/`).
    for (const type of TYPES)
      for (const container of CONTAINERS.slice(1))
        for (let i = 0; i < 2; i++) {
          const data =
            type === 'card'
              ? { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 }
              : type === 'bank'
                ? { routing_number: '110000000', account_number: `00012345${i}` }
                : `value ${container} ${i}`;
          const created = (await m
            .get(TokenizeService)
            .createOne({ actor: who }, { type, data, containers: [container] })) as {
            id: string;
            type: string;
            containers: string[];
          };
          tokens.push({ id: created.id, type: created.type, containers: created.containers });
        }
  });

  afterAll(() => m.close());

  const rule: fc.Arbitrary<AccessRule> = fc.oneof(
    fc.record({
      priority: fc.integer({ min: 1, max: 50 }),
      container: fc.constantFrom(...CONTAINERS),
      permissions: fc.subarray(['token:read', 'token:use']),
    }),
    fc.record({
      priority: fc.integer({ min: 1, max: 50 }),
      conditions: fc.array(
        fc.oneof(
          fc.record({
            attribute: fc.constant('type' as const),
            operator: fc.constant('equals' as const),
            value: fc.constantFrom(...TYPES),
          }),
          fc.record({
            attribute: fc.constant('container' as const),
            operator: fc.constantFrom('equals' as const, 'starts_with' as const),
            value: fc.constantFrom(...CONTAINERS),
          }),
        ),
        { maxLength: 2 },
      ),
      permissions: fc.subarray(['token:read', 'token:use']),
    }),
  );

  it('lists exactly the tokens the rule evaluator lets a caller read, for random rule sets', async () => {
    const search = m.get(TokenSearchRepository);
    expect(tokens).toHaveLength(TYPES.length * (CONTAINERS.length - 1) * 2);
    let partial = 0;
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(rule, { maxLength: 4, selector: (r) => r.priority }), async (rules) => {
        const who = { ...principal(tenant, []), rules };
        const { rows, total } = await search.findOffsetPage(
          { who, permission: 'token:read', now: new Date() },
          { query: { kind: 'all' }, digest: () => Buffer.alloc(0) },
          { page: 1, size: 100 },
        );
        const expected = tokens.filter((t) => decide(who, 'token:read', t).allowed).map((t) => t.id);
        if (expected.length > 0 && expected.length < tokens.length) partial++;
        expect(total).toBe(expected.length);
        expect(rows.map((r) => r.id).sort()).toEqual(expected.sort());
      }),
      { numRuns: 60 },
    );
    // The rule sets were not all trivial: most let the caller read some tokens and not others.
    expect(partial).toBeGreaterThan(10);
  });

  it('lets one of many racing requests claim an idempotency key, per tenant', async () => {
    const repository = m.get(IdempotencyRepository);
    const other = await m.newTenant();
    const keyDigest = Buffer.from(randomUUID().replace(/-/g, ''), 'hex');
    const claim = (tenantId: string) =>
      repository.claim({
        tenantId,
        scope: 'medium',
        keyDigest,
        requestDigest: Buffer.alloc(32, 1),
        claimId: randomUUID(),
        claimedUntil: new Date(Date.now() + 60_000),
        createdAt: new Date(),
        expiresAt: new Date(Date.now() + 86_400_000),
      });
    const mine = await Promise.all(Array.from({ length: 8 }, () => claim(tenant)));
    expect(mine.filter((claimed) => claimed !== undefined)).toHaveLength(1);
    // Another tenant's request with the same key is its own.
    expect(await claim(other)).toBeDefined();
  });
});
