import { randomUUID } from 'node:crypto';
import type { Change } from '../../src/common/unit-of-work/change';
import { UnitOfWork } from '../../src/common/unit-of-work/unit-of-work';
import { FORMULAS } from '../../src/modules/orchestration/formulas/formulas';
import { ConnectionsService } from '../../src/modules/orchestration/connections/connections.service';
import { ConnectionsRepository } from '../../src/modules/orchestration/connections/connections.repository';
import { RefundsRepository } from '../../src/modules/orchestration/transactions/refunds.repository';
import { SettlementService } from '../../src/modules/orchestration/transactions/settlement.service';
import { TransactionJournal } from '../../src/modules/orchestration/transactions/transaction-journal';
import { transition } from '../../src/modules/orchestration/transactions/transaction-state';
import {
  stateOf,
  TransactionsRepository,
} from '../../src/modules/orchestration/transactions/transactions.repository';
import { TransactionCreationService } from '../../src/modules/orchestration/transactions/transaction-creation.service';
import { TokenizeService } from '../../src/modules/tokens/tokenize/tokenize.service';
import { sandboxFields } from '../support/orchestration';
import { MediumContext, principal, startMedium } from './support';

const PERMISSIONS = [
  'token:create',
  'token:use',
  'orchestration:connections:create',
  'orchestration:transactions:read',
  'orchestration:transaction:refund',
];

describe('orchestration services and repositories on PostgreSQL (no HTTP)', () => {
  let m: MediumContext;
  let tenant: string;
  let other: string;
  let connectionId: string;

  const who = () => principal(tenant, PERMISSIONS);
  /** Work in a change of its own, as a request or a job opens one (no audit rows: no actor). */
  const inChange = <T>(work: (change: Change) => Promise<T>): Promise<T> =>
    m.get(UnitOfWork).transaction({}, work);

  async function card(number = '4242424242424242'): Promise<string> {
    const token = (await m.get(TokenizeService).tokenize(
      { actor: who() },
      {
        type: 'card',
        data: { number, expiration_month: 12, expiration_year: 2031 },
      },
    )) as { id: string };
    return token.id;
  }

  async function pay(intent: 'authorize' | 'capture' = 'capture') {
    const token = await card();
    return m.get(TransactionCreationService).create(
      { actor: who() },
      {
        amount: 1200,
        currency: 'USD',
        connection_id: connectionId,
        token,
        intent,
      },
    );
  }

  beforeAll(async () => {
    m = await startMedium();
    tenant = await m.newTenant();
    other = await m.newTenant();
    const formula = FORMULAS.find((f) => f.id === 'stripe-card')!;
    const connection = await m.get(ConnectionsService).create(
      { actor: who() },
      {
        connection_formula_id: formula.id,
        method: 'card',
        display_name: 'medium',
        fields: sandboxFields(formula),
        accepted_countries: formula.supported_countries.slice(0, 2),
        accepted_currencies: ['USD'],
      },
    );
    connectionId = connection.id;
    await m.get(ConnectionsService).verify(tenant, connectionId);
  });

  afterAll(() => m.close());

  it('applies a transition only from the status it was computed for: of two racing writers one wins', async () => {
    const tx = await pay('authorize');
    const repository = m.get(TransactionsRepository);
    const row = (await repository.find(tenant, tx.id))!;
    expect(row.status).toBe('authorization_succeeded');
    const now = new Date();
    const begin = transition(stateOf(row), { kind: 'begin', operation: 'capture', amount: 1200 }, now);
    const outcomes = await Promise.all([
      inChange((change) => repository.apply(change, tenant, tx.id, begin, now)),
      inChange((change) => repository.apply(change, tenant, tx.id, begin, now)),
    ]);
    // The writer that applied it gets the transaction as it now stands; the other, nothing.
    expect(outcomes.map((o) => o !== undefined).sort()).toEqual([false, true]);
    const held = (await repository.find(tenant, tx.id))!;
    expect(held).toMatchObject({
      status: 'processing',
      previous_status: 'authorization_succeeded',
      pending_operation: 'capture',
    });
  });

  it('never reaches another tenant’s transaction or refunds', async () => {
    const tx = await pay();
    const transactions = m.get(TransactionsRepository);
    expect(await transactions.find(other, tx.id)).toBeUndefined();
    expect(await inChange((change) => transactions.lock(change, other, tx.id))).toBeUndefined();
    expect((await transactions.list(other, {}, { skip: 0, take: 100 })).total).toBe(0);
    const refused = transition(
      stateOf((await transactions.find(tenant, tx.id))!),
      {
        kind: 'approval_expired',
      },
      new Date(),
    );
    expect(
      await inChange((change) => transactions.apply(change, other, tx.id, refused, new Date())),
    ).toBeUndefined();
    expect(
      await inChange((change) => m.get(ConnectionsRepository).hasTransactions(change, other, connectionId)),
    ).toBe(false);
    expect((await m.get(RefundsRepository).list(other, tx.id, { skip: 0, take: 10 })).total).toBe(0);
  });

  it('settles a refund once, adding to the refunded amount once', async () => {
    const tx = await pay();
    const refund = await inChange((change) =>
      m.get(RefundsRepository).insert(change, {
        id: randomUUID(),
        tenantId: tenant,
        transactionId: tx.id,
        amount: 500,
        currency: 'USD',
        createdAt: new Date(),
      }),
    );
    const journal = m.get(TransactionJournal);
    const settled = await Promise.all([
      // Each in a change, as requests and the job call it (its event commits with it).
      inChange((change) => journal.settleRefund(change, refund, 'succeeded', 're_1')),
      inChange((change) => journal.settleRefund(change, refund, 'succeeded', 're_1')),
    ]);
    expect(settled.map((r) => r.status).sort()).toEqual(['processing', 'succeeded']);
    const row = (await m.get(TransactionsRepository).find(tenant, tx.id))!;
    expect(Number(row.refunded_amount)).toBe(500);
  });

  it('settles an interrupted authorization once, however many jobs run', async () => {
    const token = await card();
    const id = randomUUID();
    const longAgo = new Date(Date.now() - 10 * 60_000);
    await inChange((change) =>
      m.get(TransactionsRepository).insert(change, {
        id,
        tenantId: tenant,
        connectionId,
        tokenId: token,
        intent: 'authorize',
        amount: 900,
        currency: 'USD',
        country: null,
        externalIdentifier: null,
        metadata: null,
        paymentSource: 'ecommerce',
        merchantInitiated: false,
        isSubsequentPayment: false,
        previousSchemeTransactionId: null,
        threeDSessionId: null,
        paymentMethod: { scheme: 'visa', label: '4242', expiration_date: '12/31', fingerprint: 'f' },
        buyer: null,
        storePaymentMethod: false,
        createdBy: tenant,
        createdAt: longAgo,
      }),
    );
    const settlement = m.get(SettlementService);
    await Promise.all([settlement.settle(), settlement.settle(), settlement.settle()]);
    const row = (await m.get(TransactionsRepository).find(tenant, id))!;
    expect(row.status).not.toBe('processing');
    const logs: { n: number }[] = await m.db.query(
      `SELECT count(*)::int AS n FROM audit_logs WHERE tenant_id = $1 AND entity_id = $2 AND message LIKE 'Settled authorize%'`,
      [tenant, id],
    );
    expect(logs[0].n).toBe(1);
  });
});
