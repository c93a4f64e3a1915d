/**
 * The relay refunds service and its settlement sweep on the real repositories (the service tier's PGlite,
 * service-database.ts) with a fake processor and connections, for their specs.
 */
import type { ExclusiveJobRunner } from '../../src/common/jobs/exclusive';
import type { AppConfig } from '../../src/config/app-config';
import type {
  ConnectionsService,
  UsableConnection,
} from '../../src/modules/orchestration/connections/connections.service';
import type { ConnectionEntity } from '../../src/modules/orchestration/connections/entities/connection.entity';
import { findFormula } from '../../src/modules/orchestration/formulas/formulas';
import type {
  OperationResult,
  PollRequest,
  RefundRequest,
} from '../../src/modules/orchestration/processors/processor.port';
import type { ProcessorRegistry } from '../../src/modules/orchestration/processors/processor.registry';
import { RelayJournal } from '../../src/modules/orchestration/relay/relay-journal';
import type { CreateRelayRefundDto } from '../../src/modules/orchestration/relay/relay-refund.dto';
import { RelayRefundsRepository } from '../../src/modules/orchestration/relay/relay-refunds.repository';
import { RelayRefundsService } from '../../src/modules/orchestration/relay/relay-refunds.service';
import { RelaySettlementService } from '../../src/modules/orchestration/relay/relay-settlement.service';
import { openServiceDatabase, principalOf, type ServiceDatabase } from './service-database';

export const TENANT = '00000000-0000-4000-8000-00000000001a';
export const OTHER = '00000000-0000-4000-8000-00000000001b';
/** TENANT's stripe-card connection (`test`), and an adyen-card one (a vendor that confirms by notification). */
export const CONNECTION = '00000000-0000-4000-8000-0000000001c1';
export const ADYEN = '00000000-0000-4000-8000-0000000001c3';
/** A connection of TENANT's whose verification failed (the stub answers it `failed`). */
export const FAILED = '00000000-0000-4000-8000-0000000001c2';

let database: ServiceDatabase | undefined;

function db(): ServiceDatabase {
  if (!database) throw new Error('call useRelayDatabase() at the top of the spec file');
  return database;
}

/** Opens the spec file's database with the tenants and TENANT's connections; empties what each test writes. */
export function useRelayDatabase(): void {
  beforeAll(async () => {
    database = await openServiceDatabase();
    await database.newTenant('tenant', TENANT);
    await database.newTenant('other', OTHER);
    await database.subscribe(TENANT);
    await database.work.transaction({}, async (change) => {
      for (const [id, formula] of [
        [CONNECTION, 'stripe-card'],
        [ADYEN, 'adyen-card'],
      ])
        await change.query(
          `INSERT INTO connections (tenant_id, id, formula_id, method, display_name, fields, accepted_countries,
             accepted_currencies, active, environment, status, three_d_secure_enabled, created_at, updated_at)
           VALUES ($1, $2, $3, 'card', 'Vendor', '[]', '{US}', '{USD}', true, 'test', 'available', true, now(), now())`,
          [TENANT, id, formula],
        );
    });
  });
  afterAll(() => database?.close());
  beforeEach(async () => {
    await db().rows('DELETE FROM relay_refunds; DELETE FROM audit_logs; DELETE FROM webhook_events;');
    db().clock.reset();
  });
}

const connectionOf = (id: string, status = 'available'): UsableConnection => {
  const formulaId = id === ADYEN ? 'adyen-card' : 'stripe-card';
  return {
    row: { tenantId: TENANT, id, formulaId, environment: 'test', active: true, status } as ConnectionEntity,
    formula: findFormula(formulaId)!,
    credentials: { secret_key: 'sk_test_1' },
  };
};

/** The service and the sweep, with a fake processor (`refund`, `pollStatus`) behind every connection. */
export function setup() {
  const { clock, work, dataSource } = db();
  const refund = jest.fn((_: RefundRequest): Promise<OperationResult> =>
    Promise.resolve({ status: 'succeeded', vendorId: 're_1' }),
  );
  const pollStatus = jest.fn((_: PollRequest): Promise<OperationResult | { status: 'not_found' }> =>
    Promise.resolve({ status: 'not_found' }),
  );
  const processors = {
    for: () => ({ refund, pollStatus }),
    notificationFormulas: () => ['adyen-card'],
  } as unknown as ProcessorRegistry;
  const connections = {
    loadForPayment: jest.fn((tenantId: string, id: string) =>
      Promise.resolve(
        tenantId !== TENANT
          ? undefined
          : id === CONNECTION || id === ADYEN
            ? connectionOf(id)
            : id === FAILED
              ? connectionOf(id, 'failed')
              : undefined,
      ),
    ),
  } as unknown as ConnectionsService;
  const repository = new RelayRefundsRepository(dataSource);
  const journal = new RelayJournal(repository, clock);
  const service = new RelayRefundsService(repository, journal, connections, processors, clock, work);
  const settlement = new RelaySettlementService(
    repository,
    journal,
    connections,
    processors,
    clock,
    { stopping: false } as ExclusiveJobRunner,
    { VENDOR_NOTIFICATION_TIMEOUT_SECONDS: 600 } as AppConfig,
    work,
  );
  return { service, settlement, refund, pollStatus, repository, clock };
}

export const body = (extra: Partial<CreateRelayRefundDto> = {}): CreateRelayRefundDto => ({
  connection_id: CONNECTION,
  vendor_payment_id: 'pi_3OldPayment',
  amount: 700,
  currency: 'USD',
  reason: 'requested_by_customer',
  ...extra,
});

/** A private application's principal of `tenantId` holding `orchestration:relay`. */
export const who = (tenantId = TENANT) => principalOf(tenantId, ['orchestration:relay']);

/** The service database (claims for idempotency, raw rows). */
export const relayDatabase = (): ServiceDatabase => db();

/** The outbox's events so far: type and the refund's status. */
export const events = async () =>
  (
    await db().rows<{ type: string; status: string }>(
      `SELECT type, data->>'status' AS status FROM webhook_events ORDER BY created_at, ctid`,
    )
  ).map((e) => [e.type, e.status]);

/** The audit rows so far, oldest first. */
export const audit = () =>
  db().rows<{
    entity_type: string;
    entity_id: string;
    operation: string;
    message: string;
    actor_type: string;
  }>(
    `SELECT entity_type, entity_id, operation, message, actor_type FROM audit_logs ORDER BY created_at, ctid`,
  );

export async function refusedWith(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (error: unknown) => error,
  );
}
