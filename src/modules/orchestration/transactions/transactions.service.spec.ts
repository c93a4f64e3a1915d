import type { ClsService } from 'nestjs-cls';
import { FakeUnitOfWork } from '../../../../test/support/fake-unit-of-work';
import type { Principal } from '../../../common/auth/principal';
import { ValidationException } from '../../../common/errors/domain.exception';
import { Clock } from '../../../common/jobs/clock';
import type { ExclusiveJobRunner } from '../../../common/jobs/exclusive';
import type { Metrics } from '../../../common/metrics/metrics';
import type { Change, IdempotencyClaim } from '../../../common/unit-of-work/change';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import type { AppConfig } from '../../../config/app-config';
import type { TokensService, UsableToken } from '../../tokens/tokens.service';
import { ApprovalsService } from '../approvals/approvals.service';
import type { ConnectionsService, UsableConnection } from '../connections/connections.service';
import type { ConnectionEntity } from '../connections/entities/connection.entity';
import { findFormula } from '../formulas/formulas';
import { OrchestrationErrorCode, OrchestrationException } from '../orchestration.errors';
import { ProcessorUnavailable } from '../processors/processor-calls';
import type {
  AuthorizeRequest,
  AuthorizeResult,
  CaptureRequest,
  OperationRequest,
  OperationResult,
  PollRequest,
  ProcessorPort,
  RefundRequest,
} from '../processors/processor.port';
import type { ProcessorRegistry } from '../processors/processor.registry';
import type { ApprovalLinks } from './approval-links';
import type { NewRefund, RefundRow, RefundsRepository, RefundStatus } from './refunds.repository';
import { SettlementService } from './settlement.service';
import { TransactionJournal } from './transaction-journal';
import { TransactionQueriesService } from './transaction-queries.service';
import type { Transition } from './transaction-state';
import type { CreateTransactionDto } from './transaction.dto';
import type {
  IssuedApproval,
  NewTransaction,
  TransactionRow,
  TransactionsRepository,
} from './transactions.repository';
import { STUCK_AFTER_MS, TransactionsService } from './transactions.service';

/**
 * The transactions service with the settlement job, on in-memory repositories and a fake processor (no
 * database, no vendor): which changes commit, what each carries (audit rows, events, the idempotency pin),
 * how an unanswered or unrecorded vendor call is left to settlement and settled once, and what another
 * tenant reaches. The state machine itself is specified in transaction-state.spec.ts.
 */

const TENANT = '00000000-0000-4000-8000-00000000000a';
const OTHER = '00000000-0000-4000-8000-00000000000b';
const CONNECTION = '00000000-0000-4000-8000-0000000000c1';
const TOKEN = '00000000-0000-4000-8000-0000000000d1';

const principal = (tenantId: string): Principal => ({
  tenantId,
  applicationId: `${tenantId.slice(0, -2)}ff`,
  applicationType: 'private',
  keyKind: 'private',
  keyId: 'key',
  authorized: true,
  permissions: [],
  rules: [],
});

/** The `transactions` table as the repository reads and writes it (conditional transitions included). */
class FakeTransactions {
  readonly rows = new Map<string, TransactionRow>();
  /** Makes the next `apply` fail (the database went away). */
  failNextApply?: Error;

  private key = (tenantId: string, id: string) => `${tenantId}/${id}`;

  private copy = (row: TransactionRow | undefined) => (row ? { ...row } : undefined);

  insert(_change: Change, t: NewTransaction): Promise<TransactionRow> {
    const row: TransactionRow = {
      id: t.id,
      tenant_id: t.tenantId,
      connection_id: t.connectionId,
      token_id: t.tokenId,
      status: 'processing',
      pending_operation: 'authorize',
      pending_since: t.createdAt,
      pending_amount: null,
      previous_status: null,
      intent: t.intent,
      amount: String(t.amount),
      currency: t.currency,
      country: t.country,
      authorized_amount: '0',
      captured_amount: '0',
      refunded_amount: '0',
      external_identifier: t.externalIdentifier,
      metadata: t.metadata,
      payment_source: t.paymentSource,
      merchant_initiated: t.merchantInitiated,
      is_subsequent_payment: t.isSubsequentPayment,
      previous_scheme_transaction_id: t.previousSchemeTransactionId,
      three_d_session_id: t.threeDSessionId,
      payment_method: t.paymentMethod,
      scheme_transaction_id: null,
      connection_transaction_id: null,
      error_code: null,
      auth_response_code: null,
      cvv_response_code: null,
      three_d_secure: null,
      approval_token_hash: null,
      approval_token: null,
      approval_expires_at: null,
      vendor_action: null,
      authorized_at: null,
      captured_at: null,
      voided_at: null,
      created_by: null,
      created_at: t.createdAt,
      updated_at: t.createdAt,
      c_formula_id: 'stripe-card',
      c_display_name: 'Stripe',
      c_method: 'card',
    };
    this.rows.set(this.key(t.tenantId, t.id), row);
    return Promise.resolve({ ...row });
  }

  find(tenantId: string, id: string): Promise<TransactionRow | undefined> {
    return Promise.resolve(this.copy(this.rows.get(this.key(tenantId, id))));
  }

  lock(_change: Change, tenantId: string, id: string): Promise<TransactionRow | undefined> {
    return this.find(tenantId, id);
  }

  apply(
    _change: Change,
    tenantId: string,
    id: string,
    transition: Transition,
    now: Date,
    approval?: IssuedApproval,
  ): Promise<TransactionRow | undefined> {
    if (this.failNextApply) {
      const error = this.failNextApply;
      this.failNextApply = undefined;
      return Promise.reject(error);
    }
    const row = this.rows.get(this.key(tenantId, id));
    if (!row || row.status !== transition.from) return Promise.resolve(undefined);
    const p = transition.patch;
    const money = (n: number | undefined) => (n === undefined ? undefined : String(n));
    Object.assign(row, {
      status: p.status,
      pending_operation: p.pending?.operation ?? null,
      pending_since: p.pending?.since ?? null,
      pending_amount: p.pending?.amount == null ? null : String(p.pending.amount),
      previous_status: p.previousStatus ?? null,
      updated_at: now,
    });
    const optional: Partial<Record<keyof TransactionRow, unknown>> = {
      connection_transaction_id: p.connectionTransactionId,
      scheme_transaction_id: p.schemeTransactionId,
      auth_response_code: p.authResponseCode,
      cvv_response_code: p.cvvResponseCode,
      error_code: p.errorCode,
      three_d_secure: p.threeDSecure,
      authorized_amount: money(p.authorizedAmount),
      authorized_at: p.authorizedAt,
      captured_amount: money(p.capturedAmount),
      captured_at: p.capturedAt,
      voided_at: p.voidedAt,
    };
    for (const [column, value] of Object.entries(optional))
      if (value !== undefined) Object.assign(row, { [column]: value });
    if (p.approval === 'clear') Object.assign(row, { approval_token: null, vendor_action: null });
    if (p.approval === 'issue')
      Object.assign(row, {
        approval_token: approval!.sealedToken,
        approval_expires_at: approval!.expiresAt,
        vendor_action: approval!.sealedVendorAction,
      });
    return Promise.resolve({ ...row });
  }

  addRefunded(_change: Change, tenantId: string, id: string, amount: string, now: Date) {
    const row = this.rows.get(this.key(tenantId, id))!;
    row.refunded_amount = String(Number(row.refunded_amount) + Number(amount));
    row.updated_at = now;
    return Promise.resolve({ ...row });
  }

  findUnsettled(stuckBefore: Date, now: Date, limit: number): Promise<TransactionRow[]> {
    const due = [...this.rows.values()].filter(
      (t) =>
        t.status === 'capture_pending' ||
        t.status === 'authorization_void_pending' ||
        (t.status === 'processing' && t.pending_since! <= stuckBefore) ||
        (t.status === 'buyer_approval_pending' && t.approval_expires_at! <= now),
    );
    return Promise.resolve(due.slice(0, limit).map((t) => ({ ...t })));
  }
}

/** The `refunds` table. */
class FakeRefunds {
  readonly rows: (RefundRow & { updated_at: Date; vendor_id: string | null })[] = [];

  pendingTotal(_change: Change, tenantId: string, transactionId: string): Promise<number> {
    return Promise.resolve(
      this.rows
        .filter((r) => r.tenant_id === tenantId && r.transaction_id === transactionId)
        .filter((r) => r.status === 'processing')
        .reduce((sum, r) => sum + Number(r.amount), 0),
    );
  }

  insert(_change: Change, r: NewRefund): Promise<RefundRow> {
    const row = {
      id: r.id,
      tenant_id: r.tenantId,
      transaction_id: r.transactionId,
      amount: String(r.amount),
      currency: r.currency,
      status: 'processing' as const,
      created_at: r.createdAt,
      updated_at: r.createdAt,
      vendor_id: null,
    };
    this.rows.push(row);
    return Promise.resolve(this.view(row));
  }

  settle(
    _change: Change,
    refund: Pick<RefundRow, 'tenant_id' | 'id'>,
    outcome: { status: RefundStatus; vendorId: string | null },
    now: Date,
  ): Promise<RefundRow | undefined> {
    const row = this.rows.find((r) => r.tenant_id === refund.tenant_id && r.id === refund.id);
    if (!row || row.status !== 'processing') return Promise.resolve(undefined);
    Object.assign(row, { status: outcome.status, vendor_id: outcome.vendorId, updated_at: now });
    return Promise.resolve(this.view(row));
  }

  findStuck(stuckBefore: Date, limit: number): Promise<RefundRow[]> {
    const stuck = this.rows.filter((r) => r.status === 'processing' && r.updated_at <= stuckBefore);
    return Promise.resolve(stuck.slice(0, limit).map((r) => this.view(r)));
  }

  private view({ updated_at: _u, vendor_id: _v, ...row }: FakeRefunds['rows'][number]): RefundRow {
    return { ...row };
  }
}

const approved = (captured = false): AuthorizeResult => ({
  outcome: 'approved',
  captured,
  connectionTransactionId: 'pi_1',
  schemeTransactionId: 'sch_1',
  authResponseCode: '00',
  cvvResponseCode: 'match',
  errorCode: null,
  threeDSecure: null,
});

const SUCCEEDED: OperationResult = { status: 'succeeded', vendorId: 'v_1' };

function setup() {
  const clock = new Clock();
  const uow = new FakeUnitOfWork();
  const work = uow.asUnitOfWork();
  const transactions = new FakeTransactions();
  const refunds = new FakeRefunds();
  const metrics = { transactionEntered: jest.fn() };
  const processor = {
    formulaId: 'stripe-card',
    authorize: jest.fn((_: AuthorizeRequest): Promise<AuthorizeResult> => Promise.resolve(approved())),
    capture: jest.fn((_: CaptureRequest): Promise<OperationResult> => Promise.resolve(SUCCEEDED)),
    void: jest.fn((_: OperationRequest): Promise<OperationResult> => Promise.resolve(SUCCEEDED)),
    refund: jest.fn((_: RefundRequest): Promise<OperationResult> => Promise.resolve(SUCCEEDED)),
    pollStatus: jest.fn((_: PollRequest): Promise<OperationResult | { status: 'not_found' }> =>
      Promise.resolve({ status: 'not_found' }),
    ),
    completeChallenge: jest.fn(),
    verifyCredentials: jest.fn(),
  };
  const processors = {
    for: () => processor as unknown as ProcessorPort,
    notificationFormulas: () => [],
  } as unknown as ProcessorRegistry;
  const usable: UsableConnection = {
    row: {
      tenantId: TENANT,
      id: CONNECTION,
      formulaId: 'stripe-card',
      method: 'card',
      displayName: 'Stripe',
      environment: 'sandbox',
      active: true,
      status: 'available',
      acceptedCountries: ['US'],
      acceptedCurrencies: ['USD'],
      threeDSecureEnabled: true,
    } as ConnectionEntity,
    formula: findFormula('stripe-card')!,
    credentials: { key: 'ok' },
  };
  const connections = {
    loadForPayment: jest.fn((tenantId: string, id: string) =>
      Promise.resolve(tenantId === TENANT && id === CONNECTION ? usable : undefined),
    ),
  } as unknown as ConnectionsService;
  const token = {
    id: TOKEN,
    tenant_id: TENANT,
    type: 'card',
    mask: { number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2031 },
    card_brand: 'visa',
    fingerprint: 'fp',
    data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 },
    cvc: '123',
  } as unknown as UsableToken;
  /** Changes that forgot a CVC, by token id. */
  const forgotten: { change: Change; tokenId: string }[] = [];
  const loadForUse = jest.fn((who: Principal, id: string) =>
    Promise.resolve<UsableToken | undefined>(who.tenantId === TENANT && id === TOKEN ? token : undefined),
  );
  const tokens = {
    loadForUse,
    readableTokens: jest.fn((_who: Principal, ids: string[]) => Promise.resolve(new Set(ids))),
    forgetCvc: jest.fn((change: Change, _tenantId: string, tokenId: string) => {
      forgotten.push({ change, tokenId });
      return Promise.resolve();
    }),
  } as unknown as TokensService;
  const issue = jest.fn((_tenantId: string, _id: string, createdAt: Date) =>
    Promise.resolve({
      tokenDigest: Buffer.from('digest'),
      sealedToken: Buffer.from('sealed'),
      expiresAt: new Date(createdAt.getTime() + 15 * 60_000),
      sealedVendorAction: null,
    }),
  );
  const links = {
    issue,
    urlOf: (row: TransactionRow) =>
      Promise.resolve(
        row.status === 'buyer_approval_pending' && row.approval_token ? 'https://vault.test/approve' : null,
      ),
  } as unknown as ApprovalLinks;
  const repository = transactions as unknown as TransactionsRepository;
  const refundsRepository = refunds as unknown as RefundsRepository;
  const journal = new TransactionJournal(repository, refundsRepository, clock, metrics as unknown as Metrics);
  const queries = new TransactionQueriesService(repository, refundsRepository, links, tokens);
  const service = new TransactionsService(
    repository,
    refundsRepository,
    journal,
    links,
    tokens,
    connections,
    processors,
    clock,
    queries,
    work,
  );
  const approvals = new ApprovalsService(repository, journal, connections, processors, links, clock, work);
  const settlement = new SettlementService(
    repository,
    refundsRepository,
    journal,
    approvals,
    connections,
    processors,
    clock,
    { run: <T>(fn: () => T) => fn() } as unknown as ClsService,
    {} as ExclusiveJobRunner,
    { VENDOR_NOTIFICATION_TIMEOUT_SECONDS: 600 } as AppConfig,
    work,
  );
  return {
    clock,
    uow,
    transactions,
    refunds,
    metrics,
    processor,
    loadForUse,
    forgotten,
    issue,
    service,
    settlement,
  };
}

type Setup = ReturnType<typeof setup>;

const origin = (tenantId = TENANT, idempotency?: IdempotencyClaim): RequestOrigin =>
  idempotency ? { actor: principal(tenantId), idempotency } : { actor: principal(tenantId) };

const body = (extra: Partial<CreateTransactionDto> = {}): CreateTransactionDto => ({
  amount: 1200,
  currency: 'USD',
  connection_id: CONNECTION,
  token: TOKEN,
  ...extra,
});

/** A claim as the idempotency interceptor hands it over (`resumed`: the request's earlier run died). */
const claim = (resumed?: string) => ({
  resumed,
  record: jest.fn(() => Promise.resolve()),
  pin: jest.fn((_change: Change, _id: string) => Promise.resolve()),
  withhold: jest.fn(),
});

const audit = (s: Setup) => s.uow.audit.map((e) => e.message);
const events = (s: Setup) =>
  s.uow.events.map((e) => [e.type, (e.data as { status: string }).status] as [string, string]);

async function refusedWith(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (error: unknown) => error,
  );
}

describe('TransactionsService with settlement (fakes, no database)', () => {
  describe('authorize', () => {
    it('commits the transaction processing, calls the vendor, then commits its outcome with one audit row', async () => {
      const s = setup();
      const tx = await s.service.create(origin(), body());
      expect(tx).toMatchObject({
        status: 'authorization_succeeded',
        authorized_amount: 1200,
        intent: 'authorize',
      });
      expect(s.processor.authorize).toHaveBeenCalledTimes(1);
      expect(s.processor.authorize.mock.calls[0]).toEqual([
        expect.objectContaining({ amount: 1200, currency: 'USD', cvc: '123' }),
      ]);
      // Two changes: the row before the call, its outcome after.
      expect(s.uow.committed).toHaveLength(2);
      expect(events(s)).toEqual([
        ['transaction:created', 'processing'],
        ['transaction:updated', 'authorization_succeeded'],
      ]);
      expect(s.uow.audit).toEqual([
        {
          entityType: 'transaction',
          entityId: tx.id,
          operation: 'create',
          message: 'Transaction created: authorization_succeeded',
        },
      ]);
      expect(s.uow.committed[1].actor).toEqual(principal(TENANT));
    });

    it('forgets the CVC in the change that records the outcome; counts each status once committed', async () => {
      const s = setup();
      await s.service.create(origin(), body());
      expect(s.forgotten).toEqual([{ change: s.uow.committed[1], tokenId: TOKEN }]);
      expect(s.metrics.transactionEntered.mock.calls).toEqual([['processing'], ['authorization_succeeded']]);
    });

    it('sends no CVC for a card-on-file payment and forgets none', async () => {
      const s = setup();
      await s.service.create(origin(), body({ payment_source: 'card_on_file' }));
      expect(s.processor.authorize.mock.calls[0][0]).not.toHaveProperty('cvc');
      expect(s.forgotten).toEqual([]);
    });

    it('intent capture is captured at once', async () => {
      const s = setup();
      s.processor.authorize.mockResolvedValueOnce(approved(true));
      const tx = await s.service.create(origin(), body({ intent: 'capture' }));
      expect(tx).toMatchObject({
        status: 'capture_succeeded',
        captured_amount: 1200,
        intent_outcome: 'succeeded',
      });
    });

    it('refuses bad input by field before any change opens or any vendor is called', async () => {
      const s = setup();
      const error = await refusedWith(
        s.service.create(origin(), body({ currency: 'EUR', token: '00000000-0000-4000-8000-0000000000d2' })),
      );
      expect(error).toBeInstanceOf(ValidationException);
      expect(Object.keys((error as ValidationException).errors!).sort()).toEqual(['currency', 'token']);
      expect(s.uow.committed).toEqual([]);
      expect(s.processor.authorize).not.toHaveBeenCalled();
    });

    it('a vendor failure is an authorization_failed transaction, not an error', async () => {
      const s = setup();
      s.processor.authorize.mockRejectedValueOnce(new Error('vendor said 400'));
      const tx = await s.service.create(origin(), body());
      expect(tx).toMatchObject({ status: 'authorization_failed', error_code: 'processor_error' });
      expect(audit(s)).toEqual(['Transaction created: authorization_failed']);
    });

    it('a challenge issues the buyer approval link with the outcome', async () => {
      const s = setup();
      s.processor.authorize.mockResolvedValueOnce({ ...approved(), outcome: 'challenge' });
      const tx = await s.service.create(origin(), body());
      expect(tx.status).toBe('buyer_approval_pending');
      expect(tx.payment_method.approval_url).toBe('https://vault.test/approve');
      expect(s.issue).toHaveBeenCalledTimes(1);
    });
  });

  describe('idempotency: a retry never charges twice', () => {
    it('pins the transaction on the claim in the change that inserts it; the response is left to the interceptor', async () => {
      const s = setup();
      const c = claim();
      const tx = await s.service.create(origin(TENANT, c), body());
      expect(c.pin).toHaveBeenCalledTimes(1);
      expect(c.pin.mock.calls[0]).toEqual([s.uow.committed[0], tx.id]);
      expect(c.record).not.toHaveBeenCalled();
    });

    it('a retry that took over a stale claim (resumed) answers that transaction, calling no vendor', async () => {
      const s = setup();
      const first = await s.service.create(origin(), body());
      s.processor.authorize.mockClear();
      const changes = s.uow.committed.length;
      const retried = await s.service.create(origin(TENANT, claim(first.id)), body());
      expect(retried).toEqual(first);
      expect(s.processor.authorize).not.toHaveBeenCalled();
      expect(s.uow.committed).toHaveLength(changes);
    });

    it('a pin refused (a retry took the claim over) rolls the insert back and calls no vendor', async () => {
      const s = setup();
      const c = claim();
      c.pin.mockRejectedValueOnce(new Error('taken over'));
      await expect(s.service.create(origin(TENANT, c), body())).rejects.toThrow('taken over');
      expect(s.uow.committed).toEqual([]);
      expect(s.uow.rolledBack).toHaveLength(1);
      expect(s.processor.authorize).not.toHaveBeenCalled();
    });

    it('an outcome that cannot be written leaves the transaction processing; the job settles it once, asking, never charging', async () => {
      const s = setup();
      s.processor.authorize.mockResolvedValueOnce(approved(true));
      s.transactions.failNextApply = new Error('connection lost');
      const tx = await s.service.create(origin(), body({ intent: 'capture' }));
      expect(tx).toMatchObject({ status: 'processing', intent_outcome: 'pending' });
      expect(s.uow.rolledBack).toHaveLength(1);
      // Not yet stuck: the job leaves it alone.
      expect(await s.settlement.settle()).toBe(0);
      s.clock.advance(STUCK_AFTER_MS + 1_000);
      s.processor.pollStatus.mockResolvedValue({ status: 'succeeded', vendorId: 'pi_1' });
      expect(await s.settlement.settle()).toBe(1);
      expect(await s.settlement.settle()).toBe(0);
      expect(s.processor.authorize).toHaveBeenCalledTimes(1);
      expect((await s.transactions.find(TENANT, tx.id))!.status).toBe('capture_succeeded');
      expect(audit(s).filter((m) => m.startsWith('Settled'))).toEqual([
        'Settled authorize (succeeded): capture_succeeded',
      ]);
    });
  });

  describe('an unanswered vendor is left to settlement', () => {
    it('authorize: processing, the CVC forgotten all the same, then settled by the job as the service', async () => {
      const s = setup();
      s.processor.authorize.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
      const tx = await s.service.create(origin(), body());
      expect(tx.status).toBe('processing');
      expect(audit(s)).toEqual(['Processor did not answer: processing, left to settlement']);
      expect(s.forgotten.map((f) => f.tokenId)).toEqual([TOKEN]);
      s.clock.advance(STUCK_AFTER_MS + 1_000);
      s.processor.pollStatus.mockResolvedValue({ status: 'not_found' });
      expect(await s.settlement.settle()).toBe(1);
      const settled = s.uow.committed.at(-1)!;
      expect(settled.entries.map((e) => e.message)).toEqual([
        'Settled authorize (unknown to the processor): authorization_failed',
      ]);
      expect(settled.actor).toEqual({ tenantId: TENANT, applicationId: null, system: true });
    });

    it('a job that settled it while the call ran keeps its outcome; the request only logs', async () => {
      const s = setup();
      let id = '';
      s.processor.authorize.mockImplementationOnce(async () => {
        id = [...s.transactions.rows.values()][0].id;
        // The call outlasts STUCK_AFTER_MS: the job asks the vendor, which knows nothing of it yet.
        s.clock.advance(STUCK_AFTER_MS + 1_000);
        expect(await s.settlement.settle()).toBe(1);
        return approved();
      });
      const tx = await s.service.create(origin(), body());
      expect(tx).toMatchObject({ id, status: 'authorization_failed', error_code: 'processor_timeout' });
      expect(audit(s)).toHaveLength(2);
      expect(audit(s)[0]).toBe('Settled authorize (unknown to the processor): authorization_failed');
      // The request's own change wrote its audit row and nothing else.
      expect(s.uow.committed.at(-1)!.events).toEqual([]);
    });
  });

  describe('capture, void, refund', () => {
    async function authorized(s: Setup) {
      const tx = await s.service.create(origin(), body());
      s.uow.committed.length = 0;
      return tx;
    }

    it('captures in full: the transaction held processing while the vendor is asked, then its outcome', async () => {
      const s = setup();
      const tx = await authorized(s);
      const captured = await s.service.capture(origin(), tx.id);
      expect(captured).toMatchObject({ status: 'capture_succeeded', captured_amount: 1200 });
      expect(s.processor.capture.mock.calls[0][0]).toMatchObject({ amount: 1200, currency: 'USD' });
      expect(events(s)).toEqual([
        ['transaction:updated', 'processing'],
        ['transaction:updated', 'capture_succeeded'],
      ]);
      expect(s.uow.audit).toEqual([
        {
          entityType: 'transaction',
          entityId: tx.id,
          operation: 'update',
          message: 'Transaction capture of 1200 USD: succeeded',
        },
      ]);
    });

    it('refuses a capture past the authorized amount, and any capture of a transaction not authorized', async () => {
      const s = setup();
      const tx = await authorized(s);
      expect(await refusedWith(s.service.capture(origin(), tx.id, 5000))).toBeInstanceOf(ValidationException);
      expect(s.uow.rolledBack).toHaveLength(1);
      s.processor.authorize.mockResolvedValueOnce({
        ...approved(),
        outcome: 'declined',
        errorCode: 'declined',
      });
      const declined = await s.service.create(origin(), body());
      const error = await refusedWith(s.service.capture(origin(), declined.id));
      expect(error).toMatchObject({ code: OrchestrationErrorCode.Conflict });
      expect(s.processor.capture).not.toHaveBeenCalled();
    });

    it('an asynchronous capture goes capture_pending and the job settles it when the vendor has', async () => {
      const s = setup();
      const tx = await authorized(s);
      s.processor.capture.mockResolvedValueOnce({ status: 'pending' });
      expect((await s.service.capture(origin(), tx.id, 700)).status).toBe('capture_pending');
      s.processor.pollStatus.mockResolvedValueOnce({ status: 'pending' });
      expect(await s.settlement.settle()).toBe(0);
      s.clock.advance(5_000);
      s.processor.pollStatus.mockResolvedValueOnce({ status: 'succeeded' });
      expect(await s.settlement.settle()).toBe(1);
      expect(s.processor.pollStatus.mock.calls.at(-1)![0]).toMatchObject({
        operation: 'capture',
        amount: 700,
      });
      expect(await s.transactions.find(TENANT, tx.id)).toMatchObject({
        status: 'capture_succeeded',
        captured_amount: '700',
      });
      expect(audit(s).at(-1)).toBe('Settled capture (succeeded): capture_succeeded');
    });

    it('voids an authorization; the void needs the token usable by the caller', async () => {
      const s = setup();
      const tx = await authorized(s);
      const voided = await s.service.void(origin(), tx.id);
      expect(voided.status).toBe('authorization_voided');
      expect(audit(s)).toEqual(['Transaction void: succeeded']);
      const other = await authorized(s);
      s.loadForUse.mockResolvedValueOnce(undefined);
      expect(await refusedWith(s.service.void(origin(), other.id))).toMatchObject({
        code: OrchestrationErrorCode.NotFound,
      });
      expect(s.processor.void).toHaveBeenCalledTimes(1);
    });

    it('refunds what is left of the captured amount, once; a pending refund counts as taken', async () => {
      const s = setup();
      s.processor.authorize.mockResolvedValueOnce(approved(true));
      const tx = await s.service.create(origin(), body({ intent: 'capture' }));
      s.uow.committed.length = 0;
      s.processor.refund.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
      const pending = await s.service.refund(origin(), tx.id, 200);
      expect(pending).toMatchObject({ status: 'processing', amount: 200 });
      const rest = await s.service.refund(origin(), tx.id);
      expect(rest).toMatchObject({ status: 'succeeded', amount: 1000 });
      expect(audit(s)).toEqual([`Refund ${rest.id} of 1000 USD: succeeded`]);
      expect(await refusedWith(s.service.refund(origin(), tx.id, 1))).toMatchObject({
        code: OrchestrationErrorCode.Conflict,
        detail: 'The transaction has been refunded in full.',
      });
      expect((await s.transactions.find(TENANT, tx.id))!.refunded_amount).toBe('1000');
    });

    it('the job settles an unanswered refund once it is stuck, adding it to the refunded amount', async () => {
      const s = setup();
      s.processor.authorize.mockResolvedValueOnce(approved(true));
      const tx = await s.service.create(origin(), body({ intent: 'capture' }));
      s.processor.refund.mockRejectedValueOnce(new ProcessorUnavailable('timeout'));
      const refund = await s.service.refund(origin(), tx.id, 300);
      s.processor.pollStatus.mockResolvedValue({ status: 'succeeded', vendorId: 're_1' });
      expect(await s.settlement.settle()).toBe(0);
      s.clock.advance(STUCK_AFTER_MS + 1_000);
      expect(await s.settlement.settle()).toBe(1);
      expect(await s.settlement.settle()).toBe(0);
      expect(s.processor.pollStatus.mock.calls[0][0]).toMatchObject({
        operation: 'refund',
        refundId: refund.id,
      });
      expect(audit(s).at(-1)).toBe(`Refund ${refund.id} settled: succeeded`);
      expect(s.uow.events.at(-1)).toMatchObject({
        type: 'transaction:updated',
        data: { refunded_amount: 300 },
      });
    });
  });

  describe('settlement of buyer approvals', () => {
    it('expires a challenge the buyer never answered, as the service', async () => {
      const s = setup();
      s.processor.authorize.mockResolvedValueOnce({ ...approved(), outcome: 'challenge' });
      const tx = await s.service.create(origin(), body());
      expect(await s.settlement.settle()).toBe(0);
      s.clock.advance(15 * 60_000 + 1_000);
      expect(await s.settlement.settle()).toBe(1);
      const expired = s.uow.committed.at(-1)!;
      expect(expired.entries.map((e) => e.message)).toEqual(['Buyer approval expired: authorization_failed']);
      expect(expired.actor.system).toBe(true);
      const row = (await s.transactions.find(TENANT, tx.id))!;
      expect(row).toMatchObject({ status: 'authorization_failed', error_code: 'approval_expired' });
      expect(row.approval_token).toBeNull();
    });
  });

  describe('tenant isolation as the service sees it', () => {
    it("another tenant's caller gets 404 for every operation and cannot pay with the tenant's connection or token", async () => {
      const s = setup();
      const tx = await s.service.create(origin(), body());
      s.uow.committed.length = 0;
      for (const attempt of [
        s.service.capture(origin(OTHER), tx.id),
        s.service.void(origin(OTHER), tx.id),
        s.service.refund(origin(OTHER), tx.id),
      ]) {
        const error = await refusedWith(attempt);
        expect(error).toBeInstanceOf(OrchestrationException);
        expect(error).toMatchObject({ code: OrchestrationErrorCode.NotFound });
      }
      const error = await refusedWith(s.service.create(origin(OTHER), body()));
      expect(Object.keys((error as ValidationException).errors!).sort()).toEqual(['connection_id', 'token']);
      expect(s.uow.committed).toEqual([]);
      expect(s.processor.capture).not.toHaveBeenCalled();
      expect(s.processor.authorize).toHaveBeenCalledTimes(1);
    });

    it("the job's changes are each made for the transaction's own tenant", async () => {
      const s = setup();
      s.processor.authorize.mockRejectedValue(new ProcessorUnavailable('timeout'));
      await s.service.create(origin(), body());
      s.clock.advance(STUCK_AFTER_MS + 1_000);
      await s.settlement.settle();
      expect(s.uow.committed.at(-1)!.actor.tenantId).toBe(TENANT);
    });
  });
});
