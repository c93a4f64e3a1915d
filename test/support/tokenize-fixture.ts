/** The tokenize service's spec (`tokenize.service.spec.ts`): its tenants, helpers and the service on the real repository. */
import type { Principal } from '../../src/common/auth/principal';
import type { TenantKeys } from '../../src/common/crypto/tenant-keys.service';
import type { Metrics } from '../../src/common/metrics/metrics';
import type { Change } from '../../src/common/unit-of-work/change';
import type { RequestOrigin } from '../../src/common/unit-of-work/origin.decorator';
import { openServiceDatabase, type ServiceDatabase } from '../../src/../test/support/service-database';
import {
  CardEnumerationConflict,
  CardEnumerationGuard,
  CardEnumerationRefused,
} from '../../src/modules/tokens/enumeration/card-enumeration.service';
import {
  DEFAULT_LIMITS,
  ExpressionEvaluator,
} from '../../src/modules/tokens/expressions/expression-evaluator';
import { TokensRepository } from '../../src/modules/tokens/tokens.repository';
import type { RateLimiter } from '../../src/common/throttling/rate-limiter';
import type { AppConfig } from '../../src/config/app-config';
import { PublicTokenizeLimit } from '../../src/modules/tokens/tokenize/public-tokenize-limit';
import { TokenizeService } from '../../src/modules/tokens/tokenize/tokenize.service';

export const TENANT = '00000000-0000-4000-8000-000000000001';
export const OTHER_TENANT = '00000000-0000-4000-8000-000000000009';
export const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };

/** The kind of domain error a refused call fails with (undefined when it succeeds). */
export const kindOf = (call: Promise<unknown>): Promise<string | undefined> =>
  call.then(
    () => undefined,
    (error: { kind: string }) => error.kind,
  );

/** A Luhn-valid card number of the 424242…4242 group, `n` its middle digits' seed. */
export function cardNumber(n: number): string {
  for (let middle = n * 10; ; middle++) {
    const number = `424242${String(middle).padStart(6, '0')}4242`;
    let sum = 0;
    for (let i = 0; i < 16; i++) {
      let d = Number(number[15 - i]);
      if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
      sum += d;
    }
    if (sum % 10 === 0) return number;
  }
}

export const principal = (permissions: string[], tenantId = TENANT): Principal => ({
  tenantId,
  applicationId: '00000000-0000-4000-8000-000000000003',
  applicationType: 'private',
  keyKind: 'private',
  keyId: '00000000-0000-4000-8000-000000000004',
  authorized: true,
  permissions,
  rules: [],
});

let db: ServiceDatabase;

/**
 * The spec file's database: opened before its tests with the two tenants (webhooks subscribed for the
 * first), emptied of tokens, audit rows and events before each, and the clock reset. Answers the database.
 */
export function useTokenizeDatabase(): () => ServiceDatabase {
  beforeAll(async () => {
    db = await openServiceDatabase();
    await db.newTenant('tokenize', TENANT);
    await db.newTenant('other', OTHER_TENANT);
    await db.subscribe(TENANT);
  });
  afterAll(() => db.close());
  beforeEach(async () => {
    await db.rows(
      'DELETE FROM tokens; DELETE FROM audit_logs; DELETE FROM webhook_deliveries; DELETE FROM webhook_events;',
    );
    db.clock.reset();
  });
  return () => db;
}

/** The tokens as the database holds them. */
export const tokens = () =>
  db.rows<{
    id: string;
    tenant_id: string;
    data: Buffer;
    data_key: number;
    fingerprint_groups: Buffer[] | null;
  }>('SELECT id, tenant_id, data, data_key, fingerprint_groups FROM tokens ORDER BY created_at, id');
export const audit = () =>
  db.rows<{ entity_type: string; entity_id: string; operation: string; message: string; token_type: string }>(
    'SELECT entity_type, entity_id, operation, message, token_type FROM audit_logs ORDER BY created_at, ctid',
  );
export const events = () =>
  db.rows<{ type: string; entity_id: string }>(
    'SELECT type, entity_id FROM webhook_events ORDER BY created_at, ctid',
  );

/**
 * The service on the real repository, whose calls are watched (they still run): which change wrote
 * (`transaction` or one `statement`), what it locked and purged. The card enumeration guard is faked.
 */
export function setUp(
  options: { limit?: number; publicPerMinute?: number; conflicts?: number; optimistic?: boolean } = {},
) {
  const repository = new TokensRepository(db.dataSource);
  const inserts = jest.spyOn(repository, 'insert');
  const locked = jest.spyOn(repository, 'lockForDeduplication');
  const purged = jest.spyOn(repository, 'purgeExpired');
  const clock = db.clock;
  const counted: string[][] = [];
  const refusals: Principal[] = [];
  let conflicts = options.conflicts ?? 0;
  let seenConflicts = 0;
  const enumeration = {
    count: async (change: Change, _who: Principal, _keys: TenantKeys, numbers: string[]) => {
      if (numbers.length > (options.limit ?? 10)) throw new CardEnumerationRefused();
      // Another request counted in the same groups between the read and the write (one statement only).
      if (numbers.length && change.mode === 'statement' && conflicts-- > 0)
        throw new CardEnumerationConflict();
      if (numbers.length) counted.push(numbers);
    },
    refused: async (who: Principal) => void refusals.push(who),
    optimistic: options.optimistic ?? true,
  } as unknown as CardEnumerationGuard;
  const created: string[][] = [];
  const metrics = {
    tokensCreated: (types: string[]) => void created.push(types),
    cardEnumerationConflict: () => void seenConflicts++,
  } as unknown as Metrics;
  // The shared counters, in memory: hits per tracker this minute.
  const hits = new Map<string, number>();
  const limiter = {
    hit: async (name: string, tracker: string, limit: number) => {
      const n = (hits.get(`${name}:${tracker}`) ?? 0) + 1;
      hits.set(`${name}:${tracker}`, n);
      return n > limit ? 42 : undefined;
    },
  } as unknown as RateLimiter;
  const config = { PUBLIC_TOKENIZE_PER_MINUTE: options.publicPerMinute ?? 60 } as AppConfig;
  const service = new TokenizeService(
    new ExpressionEvaluator({ ...DEFAULT_LIMITS, workers: 0 }),
    repository,
    db.freshTenantKeys(),
    clock,
    metrics,
    enumeration,
    db.work,
    new PublicTokenizeLimit(limiter, config),
  );
  /** The mode of each change that inserted. */
  const modes = () => inserts.mock.calls.map(([change]) => change.mode);
  return {
    service,
    inserts,
    locked,
    purged,
    modes,
    clock,
    counted,
    refusals,
    created,
    hits,
    get conflicts() {
      return seenConflicts;
    },
  };
}

export const origin = (permissions: string[] = ['token:create'], tenantId = TENANT): RequestOrigin => ({
  actor: principal(permissions, tenantId),
});
