import request from 'supertest';
import { Clock } from '../../src/common/jobs/clock';
import { ExclusiveJobRunner } from '../../src/common/jobs/exclusive';
import { LOCK_KEYS } from '../../src/database/data-source';
import { RelaySettlementService } from '../../src/modules/orchestration/relay/relay-settlement.service';
import { SettlementService } from '../../src/modules/orchestration/transactions/settlement.service';
import type { TestApp } from './app';
import { ignoreTimeout, waitFor } from './wait';

/**
 * A settlement pass run by hand, `after` seconds from now (the app's clock moved on for the pass only), over
 * the tenants this file made: their transactions and refunds, or their relay refunds (`relay`). Test files
 * share one database, so a pass over every tenant would settle other files' operations still in flight,
 * asking this file's fakes about them. It runs as the job does, under the job's advisory lock, so that no
 * scheduled pass (this app's, with the clock moved, or another file's) runs beside it. Returns how many
 * moved.
 */
export async function settleOwn(
  t: TestApp,
  { after = 0, relay = false }: { after?: number; relay?: boolean } = {},
): Promise<number> {
  const [name, lockKey] = relay
    ? (['relay-settlement', LOCK_KEYS.jobRelaySettlement] as const)
    : (['settlement', LOCK_KEYS.jobSettlement] as const);
  const pass = (tenantId: string) =>
    relay
      ? t.app.get(RelaySettlementService).settle(tenantId)
      : t.app.get(SettlementService).settle(tenantId);
  const clock = t.app.get(Clock);
  const run = () =>
    t.app.get(ExclusiveJobRunner).runAlone(name, lockKey, async () => {
      clock.advance(after * 1000);
      try {
        let moved = 0;
        for (const tenantId of t.tenants) moved += await pass(tenantId);
        return { moved };
      } finally {
        clock.advance(-after * 1000);
      }
    });
  // Another app's scheduled pass may hold the lock while it waits on a vendor's time-out.
  return (await waitFor(run, { timeoutMs: 60_000, intervalMs: 50, what: `the ${name} job's lock` })).moved;
}

export const ORCHESTRATION_PERMISSIONS = [
  'token:create',
  'token:read',
  'token:use',
  'orchestration:connection_formulas',
  'orchestration:connections:create',
  'orchestration:connections:update',
  'orchestration:connections:delete',
  'orchestration:transactions:read',
  'orchestration:transaction:capture',
  'orchestration:transaction:refund',
];

/** Field values that satisfy each formula's required fields (sandbox credentials). */
export function sandboxFields(
  formula: { fields: { key: string; required: boolean }[] },
  secret = 'sk_test_ok',
) {
  return formula.fields.filter((f) => f.required).map((f) => ({ key: f.key, value: `${secret}_${f.key}` }));
}

export interface ConnectionOptions {
  formulaId?: string;
  secret?: string;
  currencies?: string[];
  countries?: string[];
  active?: boolean;
  wait?: boolean;
}

/** Creates a connection and, unless told not to, waits for its verification to finish. */
export async function newConnection(t: TestApp, key: string, options: ConnectionOptions = {}) {
  const formulaId = options.formulaId ?? 'stripe-card';
  const formulas = await request(t.http)
    .get('/orchestration/connection_formulas')
    .set('BT-API-KEY', key)
    .expect(200);
  const formula = formulas.body.find((f: { id: string }) => f.id === formulaId);
  const res = await request(t.http)
    .post('/orchestration/connections')
    .set('BT-API-KEY', key)
    .send({
      connection_formula_id: formulaId,
      method: 'card',
      display_name: `${formula.display_name} test`,
      fields: sandboxFields(formula, options.secret),
      accepted_countries: options.countries ?? formula.supported_countries.slice(0, 2),
      accepted_currencies: options.currencies ?? formula.supported_currencies.slice(0, 2),
      active: options.active ?? true,
    })
    .expect(201);
  if (options.wait !== false) await waitForConnection(t, key, res.body.id);
  return res.body as {
    id: string;
    status: string;
    accepted_currencies: string[];
    accepted_countries: string[];
  };
}

export async function waitForConnection(
  t: TestApp,
  key: string,
  id: string,
  timeoutMs = 5000,
): Promise<string> {
  // The last status even when it stays pending: the caller's assertion names what it expected.
  let status = 'pending';
  await waitFor(
    async () => {
      const res = await request(t.http)
        .get(`/orchestration/connections/${id}`)
        .set('BT-API-KEY', key)
        .expect(200);
      status = res.body.status as string;
      return status !== 'pending';
    },
    { timeoutMs, intervalMs: 100, what: `connection ${id} to be verified` },
  ).catch(ignoreTimeout);
  return status;
}

/** Polls a transaction until `done` holds or the time is up. */
export async function waitForTransaction(
  t: TestApp,
  key: string,
  id: string,
  done: (tx: { status: string }) => boolean,
  timeoutMs = 8000,
) {
  // The transaction as it last stood even when `done` never held: the caller's assertion says more.
  let last: { status: string; captured_amount: number } | undefined;
  await waitFor(
    async () => {
      const res = await request(t.http)
        .get(`/orchestration/transactions/${id}`)
        .set('BT-API-KEY', key)
        .expect(200);
      last = res.body as { status: string; captured_amount: number };
      return done(last);
    },
    { timeoutMs, intervalMs: 200, what: `transaction ${id}` },
  ).catch(ignoreTimeout);
  return last!;
}

export interface LogRow {
  actor_type: string;
  actor_id: string | null;
  operation: string;
  message: string;
}

/** The audit rows of a connection's verifications (`update` rows by the service itself), oldest first. */
export async function verificationLogs(t: TestApp, managementKey: string, id: string): Promise<LogRow[]> {
  const res = await request(t.http)
    .get('/logs')
    .query({ entity_type: 'connection', entity_id: id })
    .set('BT-API-KEY', managementKey)
    .expect(200);
  return (res.body.data as LogRow[]).filter((l) => l.actor_type === 'system').reverse();
}

const ROUTE_RULES = '/orchestration/flows/card-transaction/actions/route-transaction/rules';

/**
 * Card transactions routed by one rule at a time: each call of the answered function deletes the rule its
 * previous call made, then makes one without conditions listing the connections `order` names (their ids
 * in `ids`, read at the call), in that order.
 */
export function oneRouteRule<Name extends string>(ids: Record<Name, string>) {
  let rule: string | undefined;
  return async (t: TestApp, key: string, order: Name[]): Promise<void> => {
    if (rule) await request(t.http).delete(`${ROUTE_RULES}/${rule}`).set('BT-API-KEY', key).expect(204);
    rule = (
      await request(t.http)
        .post(ROUTE_RULES)
        .set('BT-API-KEY', key)
        .send({
          description: order.join(', then '),
          conditions: [],
          outcome: { type: 'list', result: order.map((name) => ids[name]) },
        })
        .expect(201)
    ).body.id as string;
  };
}

/** A transaction's attempts, first to last, each with its connection's name in `ids` (undefined: none). */
export async function namedAttempts<Name extends string>(
  t: TestApp,
  key: string,
  id: string,
  ids: Record<Name, string>,
) {
  const res = await request(t.http)
    .get(`/orchestration/transactions/${id}/attempts`)
    .set('BT-API-KEY', key)
    .expect(200);
  const nameOf = (connection: string) =>
    (Object.entries(ids) as [Name, string][]).find(([, value]) => value === connection)?.[0];
  return (
    res.body as { number: number; status: string; error_code: string | null; connection: { id: string } }[]
  ).map((a) => ({
    number: a.number,
    connection: nameOf(a.connection.id),
    status: a.status,
    error_code: a.error_code,
  }));
}
