/**
 * The transactions service with the settlement job on in-memory repositories and a fake processor, for
 * its service spec (src/modules/orchestration/transactions/transactions.service.spec.ts).
 */
import { FakeUnitOfWork } from './fake-unit-of-work';
import type { Principal } from '../../src/common/auth/principal';
import { Clock } from '../../src/common/jobs/clock';
import type { ExclusiveJobRunner } from '../../src/common/jobs/exclusive';
import type { Metrics } from '../../src/common/metrics/metrics';
import type { Change, IdempotencyClaim } from '../../src/common/unit-of-work/change';
import type { RequestOrigin } from '../../src/common/unit-of-work/origin.decorator';
import type { AppConfig } from '../../src/config/app-config';
import type { TokensService, UsableToken } from '../../src/modules/tokens/tokens.service';
import type {
  ConnectionsService,
  UsableConnection,
} from '../../src/modules/orchestration/connections/connections.service';
import type { ConnectionEntity } from '../../src/modules/orchestration/connections/entities/connection.entity';
import { findFormula } from '../../src/modules/orchestration/formulas/formulas';
import type {
  AuthorizeRequest,
  AuthorizeResult,
  CaptureRequest,
  OperationRequest,
  OperationResult,
  PollRequest,
  ProcessorPort,
  RefundRequest,
} from '../../src/modules/orchestration/processors/processor.port';
import type { ProcessorRegistry } from '../../src/modules/orchestration/processors/processor.registry';
import type { ApprovalLinks } from '../../src/modules/orchestration/transactions/approval-links';
import type { RefundsRepository } from '../../src/modules/orchestration/transactions/refunds.repository';
import { SettlementService } from '../../src/modules/orchestration/transactions/settlement.service';
import { TransactionJournal } from '../../src/modules/orchestration/transactions/transaction-journal';
import { TransactionQueriesService } from '../../src/modules/orchestration/transactions/transaction-queries.service';
import type { CreateTransactionDto } from '../../src/modules/orchestration/transactions/transaction.dto';
import type {
  TransactionRow,
  TransactionsRepository,
} from '../../src/modules/orchestration/transactions/transactions.repository';
import { TransactionsService } from '../../src/modules/orchestration/transactions/transactions.service';
import { TransactionRouting } from '../../src/modules/orchestration/transactions/transaction-routing';
import { TransactionCreationService } from '../../src/modules/orchestration/transactions/transaction-creation.service';
import type { FlowRulesService } from '../../src/modules/orchestration/flows/flow-rules.service';
import { FakeAttempts, FakeBuyers, FakeRefunds, FakeTransactions } from './fake-orchestration-repositories';
import type { BuyersRepository } from '../../src/modules/orchestration/buyers/buyers.repository';
import { BuyersService } from '../../src/modules/orchestration/buyers/buyers.service';
import { ChargedCards } from '../../src/modules/orchestration/transactions/charged-card';
import type { AttemptsRepository } from '../../src/modules/orchestration/transactions/attempts.repository';
import { ConnectionBreaker } from '../../src/modules/orchestration/transactions/connection-breaker';

/**
 * The transactions service with the settlement job, on in-memory repositories and a fake processor (no
 * database, no vendor): which changes commit, what each carries (audit rows, events, the idempotency pin),
 * how an unanswered or unrecorded vendor call is left to settlement and settled once, and what another
 * tenant reaches. The state machine itself is specified in transaction-state.spec.ts.
 */

export const TENANT = '00000000-0000-4000-8000-00000000000a';
export const OTHER = '00000000-0000-4000-8000-00000000000b';
export const CONNECTION = '00000000-0000-4000-8000-0000000000c1';
export const TOKEN = '00000000-0000-4000-8000-0000000000d1';

export const principal = (tenantId: string): Principal => ({
  tenantId,
  applicationId: `${tenantId.slice(0, -2)}ff`,
  applicationType: 'private',
  keyKind: 'private',
  keyId: 'key',
  authorized: true,
  permissions: [],
  rules: [],
});

export const approved = (captured = false): AuthorizeResult => ({
  outcome: 'approved',
  captured,
  connectionTransactionId: 'pi_1',
  schemeTransactionId: 'sch_1',
  authResponseCode: '00',
  cvvResponseCode: 'match',
  errorCode: null,
  threeDSecure: null,
});

export const SUCCEEDED: OperationResult = { status: 'succeeded', vendorId: 'v_1' };

/** Connection ids of `setup({ candidates })`: the first is CONNECTION. */
export const candidateId = (i: number): string =>
  i === 0 ? CONNECTION : `00000000-0000-4000-8000-0000000000c${i + 1}`;

/**
 * `candidates`: that many connections, each with a processor of its own (`processors[i]`), that a route
 * rule tries in order when a create names no connection.
 */
export function setup(options: { candidates?: number } = {}) {
  const clock = new Clock();
  const uow = new FakeUnitOfWork();
  const work = uow.asUnitOfWork();
  const transactions = new FakeTransactions();
  const refunds = new FakeRefunds();
  const metrics = { transactionEntered: jest.fn(), paymentAttempted: jest.fn() };
  const attempts = new FakeAttempts();
  transactions.attempts = attempts;
  const processorMock = () => ({
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
  });
  const processor = processorMock();
  const count = options.candidates ?? 1;
  const candidateProcessors = [processor, ...Array.from({ length: count - 1 }, processorMock)];
  const processors = {
    for: (row: { id?: string }) =>
      (candidateProcessors[Math.max(0, ids.indexOf(row.id ?? CONNECTION))] ??
        processor) as unknown as ProcessorPort,
    notificationFormulas: () => [],
  } as unknown as ProcessorRegistry;
  const ids = Array.from({ length: count }, (_, i) => candidateId(i));
  const usableAt = (id: string): UsableConnection => ({
    row: {
      tenantId: TENANT,
      id,
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
  });
  const connections = {
    loadForPayment: jest.fn((tenantId: string, id: string) =>
      Promise.resolve(tenantId === TENANT && ids.includes(id) ? usableAt(id) : undefined),
    ),
  } as unknown as ConnectionsService;
  const rules = {
    decide: () =>
      Promise.resolve({
        declined: false,
        ruleId: count > 1 ? 'rule' : null,
        candidates: count > 1 ? ids : [],
      }),
  } as unknown as FlowRulesService;
  const breaker = new ConnectionBreaker();
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
    comparable: jest.fn(() => Promise.resolve(true)),
  } as unknown as TokensService;
  const buyers = new FakeBuyers(new Map([[TOKEN, 'fp-token']]));
  const buyersRepository = buyers as unknown as BuyersRepository;
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
  const attemptsRepository = attempts as unknown as AttemptsRepository;
  const journal = new TransactionJournal(
    repository,
    refundsRepository,
    clock,
    metrics as unknown as Metrics,
    attemptsRepository,
    buyersRepository,
  );
  const queries = new TransactionQueriesService(
    repository,
    refundsRepository,
    links,
    tokens,
    attemptsRepository,
  );
  const service = new TransactionsService(
    refundsRepository,
    journal,
    tokens,
    connections,
    processors,
    clock,
    queries,
    work,
  );
  const creation = new TransactionCreationService(
    journal,
    links,
    tokens,
    processors,
    clock,
    queries,
    work,
    new TransactionRouting(rules, connections),
    breaker,
    metrics as unknown as Metrics,
    new ChargedCards(tokens, new BuyersService(buyersRepository, tokens, clock, work), work),
  );
  const settlement = new SettlementService(
    repository,
    refundsRepository,
    journal,
    connections,
    processors,
    clock,
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
    candidateProcessors,
    attempts,
    buyers,
    breaker,
    loadForUse,
    forgotten,
    issue,
    service,
    creation,
    settlement,
  };
}

export type Setup = ReturnType<typeof setup>;

export const origin = (tenantId = TENANT, idempotency?: IdempotencyClaim): RequestOrigin =>
  idempotency ? { actor: principal(tenantId), idempotency } : { actor: principal(tenantId) };

export const body = (extra: Partial<CreateTransactionDto> = {}): CreateTransactionDto => ({
  amount: 1200,
  currency: 'USD',
  connection_id: CONNECTION,
  token: TOKEN,
  ...extra,
});

/** A claim as the idempotency interceptor hands it over (`resumed`: the request's earlier run died). */
export const claim = (resumed?: string) => ({
  resumed,
  record: jest.fn(() => Promise.resolve()),
  pin: jest.fn((_change: Change, _id: string) => Promise.resolve()),
  withhold: jest.fn(),
});

export const audit = (s: Setup) => s.uow.audit.map((e) => e.message);
export const events = (s: Setup) =>
  s.uow.events.map((e) => [e.type, (e.data as { status: string }).status] as [string, string]);

export async function refusedWith(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (error: unknown) => error,
  );
}
