/**
 * The transactions service with the settlement job on the real repositories (the service tier's PGlite,
 * service-database.ts) and fake processors, for the specs of transactions, their creation and buyers.
 */
import { openServiceDatabase, type ServiceDatabase } from './service-database';
import type { Principal } from '../../src/common/auth/principal';
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
import { RefundsRepository } from '../../src/modules/orchestration/transactions/refunds.repository';
import { SettlementService } from '../../src/modules/orchestration/transactions/settlement.service';
import { TransactionJournal } from '../../src/modules/orchestration/transactions/transaction-journal';
import { TransactionQueriesService } from '../../src/modules/orchestration/transactions/transaction-queries.service';
import type { CreateTransactionDto } from '../../src/modules/orchestration/transactions/transaction.dto';
import {
  type TransactionRow,
  TransactionsRepository,
} from '../../src/modules/orchestration/transactions/transactions.repository';
import { TransactionsService } from '../../src/modules/orchestration/transactions/transactions.service';
import { TransactionRouting } from '../../src/modules/orchestration/transactions/transaction-routing';
import { TransactionCreationService } from '../../src/modules/orchestration/transactions/transaction-creation.service';
import type { FlowRulesService } from '../../src/modules/orchestration/flows/flow-rules.service';
import { BuyersRepository } from '../../src/modules/orchestration/buyers/buyers.repository';
import { BuyersService } from '../../src/modules/orchestration/buyers/buyers.service';
import { ConnectionTokensRepository } from '../../src/modules/orchestration/buyers/connection-tokens.repository';
import { ConnectionTokensService } from '../../src/modules/orchestration/buyers/connection-tokens.service';
import { ChargedCards } from '../../src/modules/orchestration/transactions/charged-card';
import { AttemptsRepository } from '../../src/modules/orchestration/transactions/attempts.repository';
import { ConnectionBreaker } from '../../src/modules/orchestration/transactions/connection-breaker';

/**
 * The transactions service with the settlement job, on the real repositories and a fake processor (no
 * vendor): what the database holds after each call (rows, attempts, audit rows, outbox events), how an
 * unanswered or unrecorded vendor call is left to settlement and settled once, and what another tenant
 * reaches. The state machine itself is specified in transaction-state.spec.ts.
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
let database: ServiceDatabase | undefined;

/** The spec file's database, opened by `useTransactionsDatabase`. */
function db(): ServiceDatabase {
  if (!database) throw new Error('call useTransactionsDatabase() at the top of the spec file');
  return database;
}

/** The most candidates a spec asks for: each is a connection of TENANT's in the database. */
const MAX_CANDIDATES = 5;

/**
 * Opens the spec file's database (before all its tests) with what every setup pays with: the tenants
 * TENANT and OTHER, TENANT's candidate connections and its card token; closes it after them.
 */
export function useTransactionsDatabase(): void {
  beforeAll(async () => {
    database = await openServiceDatabase();
    await database.newTenant('tenant', TENANT);
    await database.newTenant('other', OTHER);
    await database.subscribe(TENANT);
    await database.subscribe(OTHER);
    await database.work.transaction({}, async (change) => {
      for (let i = 0; i < MAX_CANDIDATES; i++)
        await change.query(
          `INSERT INTO connections (tenant_id, id, formula_id, method, display_name, fields, accepted_countries,
             accepted_currencies, active, environment, status, three_d_secure_enabled, created_at, updated_at)
           VALUES ($1, $2, 'stripe-card', 'card', 'Stripe', '[]', '{US}', '{USD}', true, 'sandbox', 'available',
             true, now(), now())`,
          [TENANT, candidateId(i)],
        );
      await change.query(
        `INSERT INTO tokens (tenant_id, id, type, data, fingerprint, fingerprint_expression, containers, created_at)
         VALUES ($1, $2, 'card', '\\x00', 'fp-token', '{{ data.number }}', '{/pci/high/}', now())`,
        [TENANT, TOKEN],
      );
    });
  });
  afterAll(() => database?.close());
}

/**
 * Empties what a test writes, and sets the clock back: each test starts from the seeded database. DELETE
 * rather than TRUNCATE: on these few rows it costs a tenth of the CPU (TRUNCATE makes new files).
 */
async function clear(): Promise<void> {
  await db().rows(
    ['refunds', 'transaction_attempts', 'transactions', 'buyer_payment_methods', 'buyers', 'audit_logs']
      .concat(['webhook_deliveries', 'webhook_events'])
      .map((table) => `DELETE FROM ${table};`)
      .join(' '),
  );
  db().clock.reset();
}

/**
 * `keep`: the database as the previous setup left it (a property's runs, each on its own transaction).
 */
export async function setup(options: { candidates?: number; keep?: boolean } = {}) {
  if (!options.keep) await clear();
  const { clock, work, dataSource } = db();
  const transactions = new TransactionsRepository(dataSource);
  const refunds = new RefundsRepository(dataSource);
  const attempts = new AttemptsRepository(dataSource);
  const metrics = { transactionEntered: jest.fn(), paymentAttempted: jest.fn() };
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
  const buyersRepository = new BuyersRepository(dataSource);
  const connectionTokensRepository = new ConnectionTokensRepository(dataSource);
  const connectionTokens = new ConnectionTokensService(
    connectionTokensRepository,
    buyersRepository,
    db().tenantKeys,
    clock,
    work,
  );
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
  const repository = transactions;
  const refundsRepository = refunds;
  const attemptsRepository = attempts;
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
    new ChargedCards(
      tokens,
      new BuyersService(buyersRepository, tokens, connectionTokensRepository, clock, work),
      work,
    ),
    connectionTokens,
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
    dataSource,
    transactions,
    refunds,
    metrics,
    processor,
    candidateProcessors,
    attempts,
    breaker,
    loadForUse,
    forgotten,
    issue,
    service,
    creation,
    settlement,
    queries,
    processors,
    tokens,
    journal,
    connections,
    links,
    work,
    connectionTokens,
  };
}

export type Setup = Awaited<ReturnType<typeof setup>>;

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

/** The audit rows written so far, oldest first. */
export const auditRows = () =>
  db().rows<{
    tenant_id: string;
    actor_id: string | null;
    actor_type: string;
    entity_type: string;
    entity_id: string;
    operation: string;
    message: string;
  }>(
    `SELECT tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message
       FROM audit_logs ORDER BY created_at, ctid`,
  );

/** Their messages. */
export const audit = async () => (await auditRows()).map((row) => row.message);

/** The outbox's events so far (of one transaction, when given), oldest first: type and status. */
export const events = async (transactionId?: string) =>
  (
    await db().rows<{ type: string; status: string }>(
      `SELECT type, data->>'status' AS status FROM webhook_events
        WHERE $1::text IS NULL OR entity_id = $1 ORDER BY created_at, ctid`,
      [transactionId ?? null],
    )
  ).map((row) => [row.type, row.status] as [string, string]);

/** The outbox's last event, as recorded. */
export const lastEvent = async () =>
  (
    await db().rows<{ type: string; data: Record<string, unknown> }>(
      'SELECT type, data FROM webhook_events ORDER BY created_at DESC, ctid DESC LIMIT 1',
    )
  )[0];

/** Sets a connection's environment (sandbox, test or live) in the database. */
export const setEnvironment = (connectionId: string, environment: string) =>
  db().rows('UPDATE connections SET environment = $2 WHERE id = $1', [connectionId, environment]);

/** The ids of the transactions written so far. */
export const transactionIds = async () =>
  (await db().rows<{ id: string }>('SELECT id FROM transactions ORDER BY created_at, id')).map((r) => r.id);

/** How many rows `table` holds. */
export const count = async (
  table: 'transactions' | 'refunds' | 'buyer_payment_methods' | 'buyer_connection_tokens',
) => Number((await db().rows<{ n: string }>(`SELECT count(*) AS n FROM ${table}`))[0].n);

/** A buyer of the tenant's, as the buyers service would have created it. */
export const addBuyer = (tenantId: string, id: string, externalIdentifier: string | null = null) =>
  db().rows(
    `INSERT INTO buyers (tenant_id, id, external_identifier, created_at, updated_at) VALUES ($1, $2, $3, now(), now())`,
    [tenantId, id, externalIdentifier],
  );

/** A token stored for a buyer (with the token's fingerprint), not used yet. */
export const storeCard = (tenantId: string, buyerId: string, tokenId: string) =>
  db().rows(
    `INSERT INTO buyer_payment_methods (tenant_id, token_id, buyer_id, fingerprint, created_at)
     SELECT tenant_id, id, $2, fingerprint, now() FROM tokens WHERE tenant_id = $1 AND id = $3`,
    [tenantId, buyerId, tokenId],
  );

/** Rows of a table as the database holds them (what a dump would show). */
export const tableRows = (table: 'buyer_connection_tokens' | 'audit_logs') =>
  db().rows<Record<string, unknown>>(`SELECT * FROM ${table}`);

/** The stored cards, as the database holds them. */
export const storedCards = () =>
  db().rows<{ token_id: string; buyer_id: string; last_used_at: Date | null }>(
    'SELECT token_id, buyer_id, last_used_at FROM buyer_payment_methods ORDER BY created_at',
  );

export async function refusedWith(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (error: unknown) => error,
  );
}
