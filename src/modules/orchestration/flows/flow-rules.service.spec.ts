import { randomUUID } from 'node:crypto';
import {
  openServiceDatabase,
  principalOf,
  type ServiceDatabase,
} from '../../../../test/support/service-database';
import { ValidationException } from '../../../common/errors/domain.exception';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import type { ChangeNotifications } from '../../../database/change-notifications';
import { ConnectionsRepository } from '../connections/connections.repository';
import { OrchestrationErrorCode } from '../orchestration.errors';
import type { TransactionFacts } from './flow-conditions';
import { FlowRulesRepository } from './flow-rules.repository';
import { FlowRulesService } from './flow-rules.service';

/**
 * Routing rules on the real repositories (the service tier's PGlite): positions kept 1..n by every
 * write, each write audited in its change, the body checked field by field (connections must be the
 * tenant's), another tenant's rules out of reach, and the decision they make for a payment.
 */
let db: ServiceDatabase;
let tenant: string;
let other: string;
let stripe: string;
let adyen: string;
let theirs: string;

/** A connection of the tenant's (the rules' outcomes name connections, which must exist). */
async function connection(tenantId: string): Promise<string> {
  const id = randomUUID();
  await db.rows(
    `INSERT INTO connections (tenant_id, id, formula_id, method, display_name, fields, accepted_countries,
       accepted_currencies, active, environment, status, three_d_secure_enabled, created_at, updated_at)
     VALUES ($1, $2, 'stripe-card', 'card', 'Stripe', '[]', '{US}', '{USD}', true, 'sandbox', 'available',
       true, now(), now())`,
    [tenantId, id],
  );
  return id;
}

beforeAll(async () => {
  db = await openServiceDatabase();
  tenant = await db.newTenant('rules');
  other = await db.newTenant('other');
  [stripe, adyen, theirs] = [await connection(tenant), await connection(tenant), await connection(other)];
});
afterAll(() => db.close());
beforeEach(() => db.rows('DELETE FROM flow_rules; DELETE FROM audit_logs;'));

/** `listening`: whether the instance hears of changes (then it may keep rules in memory). */
function setup(listening = false) {
  const changes = { listening, onChange: () => undefined } as unknown as ChangeNotifications;
  return new FlowRulesService(
    new FlowRulesRepository(db.dataSource),
    new ConnectionsRepository(db.dataSource),
    db.clock,
    db.work,
    changes,
  );
}

const origin = (tenantId = tenant): RequestOrigin => ({
  actor: principalOf(tenantId, ['orchestration:rules']),
});
const route = (result: string[], conditions: unknown[] = [], position?: number) => ({
  description: 'route',
  conditions,
  outcome: { type: 'list', result },
  ...(position === undefined ? {} : { position }),
});
const usd = { name: 'currency', operator: 'is_one_of', value: ['USD'] };
const facts = (extra: Partial<TransactionFacts> = {}): TransactionFacts => ({
  amount: 1000,
  currency: 'USD',
  country: 'US',
  scheme: 'visa',
  bin: '424242',
  paymentSource: 'ecommerce',
  merchantInitiated: false,
  intent: 'authorize',
  metadata: null,
  ...extra,
});

const positions = async (tenantId = tenant) =>
  (
    await db.rows<{ id: string; position: number }>(
      `SELECT id, position FROM flow_rules WHERE tenant_id = $1 AND action = 'route-transaction' ORDER BY position`,
      [tenantId],
    )
  ).map((row) => row.id);
const audit = async () =>
  (await db.rows<{ message: string }>('SELECT message FROM audit_logs ORDER BY created_at, ctid')).map(
    (row) => row.message,
  );
const refusal = (call: Promise<unknown>) =>
  call.then(
    () => undefined,
    (error: { code?: string; errors?: object }) =>
      error instanceof ValidationException ? Object.keys(error.errors ?? {}) : error.code,
  );

describe('FlowRulesService (real repositories on PGlite)', () => {
  it('creates rules at the end or at a position, shifting the others; each write audited', async () => {
    const rules = setup();
    const a = await rules.create(origin(), 'route-transaction', route([stripe]));
    const b = await rules.create(origin(), 'route-transaction', route([adyen]));
    const c = await rules.create(origin(), 'route-transaction', route([stripe, adyen], [usd], 1));
    expect(c).toMatchObject({ position: 1, outcome: { type: 'list', result: [stripe, adyen] } });
    expect(await positions()).toEqual([c.id, a.id, b.id]);
    expect(await audit()).toEqual([
      'Rule created: route-transaction at position 1',
      'Rule created: route-transaction at position 2',
      'Rule created: route-transaction at position 1',
    ]);
  });

  it('moves a rule and closes the gap a deleted one leaves', async () => {
    const rules = setup();
    const [a, b, c] = [
      await rules.create(origin(), 'route-transaction', route([stripe])),
      await rules.create(origin(), 'route-transaction', route([adyen])),
      await rules.create(origin(), 'route-transaction', route([stripe, adyen])),
    ];
    expect(await rules.update(origin(), 'route-transaction', c.id, route([adyen], [], 1))).toMatchObject({
      position: 1,
      outcome: { result: [adyen] },
    });
    expect(await positions()).toEqual([c.id, a.id, b.id]);
    await rules.delete(origin(), 'route-transaction', a.id);
    expect(await positions()).toEqual([c.id, b.id]);
    expect((await rules.list(origin().actor, 'route-transaction')).map((r) => r.position)).toEqual([1, 2]);
    expect((await audit()).slice(3)).toEqual([
      'Rule updated and moved from position 3 to 1',
      'Rule deleted from position 2',
    ]);
  });

  it('refuses a body by field, before any change: positions out of range, conditions, unknown or foreign connections', async () => {
    const rules = setup();
    await rules.create(origin(), 'route-transaction', route([stripe]));
    expect(await refusal(rules.create(origin(), 'route-transaction', route([stripe], [], 3)))).toEqual([
      'position',
    ]);
    expect(
      await refusal(
        rules.create(origin(), 'route-transaction', route([randomUUID(), theirs], [{ name: 'x' }])),
      ),
    ).toEqual(['conditions[0]', 'outcome.result[0]', 'outcome.result[1]']);
    expect(await refusal(rules.create(origin(), 'route-transaction', route([stripe, stripe])))).toEqual([
      'outcome.result',
    ]);
    expect(
      await refusal(
        rules.create(origin(), 'decline-early', {
          description: 'd',
          conditions: [],
          outcome: { type: 'list' },
        }),
      ),
    ).toEqual(['outcome']);
    expect(await positions()).toHaveLength(1);
    expect(await audit()).toHaveLength(1);
  });

  it("another tenant's caller neither sees nor changes the tenant's rules (404)", async () => {
    const rules = setup();
    const rule = await rules.create(origin(), 'route-transaction', route([stripe]));
    for (const call of [
      rules.get(origin(other).actor, 'route-transaction', rule.id),
      rules.update(origin(other), 'route-transaction', rule.id, route([theirs], [], 1)),
      rules.delete(origin(other), 'route-transaction', rule.id),
    ])
      expect(await refusal(call)).toBe(OrchestrationErrorCode.NotFound);
    expect(await rules.list(origin(other).actor, 'route-transaction')).toEqual([]);
    expect(await rules.get(origin().actor, 'route-transaction', rule.id)).toEqual(rule);
    expect(await audit()).toHaveLength(1);
  });

  it('decides: the first matching decline-early declines; else the first matching route gives its connections', async () => {
    const rules = setup();
    await rules.create(origin(), 'route-transaction', route([adyen], [{ ...usd, value: ['EUR'] }]));
    const usdRoute = await rules.create(origin(), 'route-transaction', route([stripe, adyen], [usd]));
    expect(await rules.decide(tenant, facts())).toEqual({
      declined: false,
      ruleId: usdRoute.id,
      candidates: [stripe, adyen],
    });
    expect(await rules.decide(tenant, facts({ currency: 'GBP' }))).toEqual({
      declined: false,
      ruleId: null,
      candidates: [],
    });
    expect(await rules.decide(tenant, facts(), false)).toEqual({
      declined: false,
      ruleId: null,
      candidates: [],
    });
    const decline = await rules.create(origin(), 'decline-early', {
      description: 'no mail order',
      conditions: [{ name: 'payment_source', operator: 'is_one_of', value: ['recurring'] }],
      outcome: { type: 'boolean', result: true },
    });
    expect(await rules.decide(tenant, facts({ paymentSource: 'recurring' }))).toEqual({
      declined: true,
      ruleId: decline.id,
    });
    expect(await rules.decide(other, facts())).toEqual({ declined: false, ruleId: null, candidates: [] });
  });

  it('an instance that keeps rules in memory sees its own change at once', async () => {
    const rules = setup(true);
    expect(await rules.decide(tenant, facts())).toMatchObject({ candidates: [] });
    await rules.create(origin(), 'route-transaction', route([stripe]));
    expect(await rules.decide(tenant, facts())).toMatchObject({ candidates: [stripe] });
  });
});
