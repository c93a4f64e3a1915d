import type { TenantKeyStore } from '../../src/common/crypto/tenant-key.store';
import { Clock as SystemClock, type Clock } from '../../src/common/jobs/clock';
import { KeyRecords } from '../../src/common/crypto/key-records';
import { MasterKeyRing, type MasterKey } from '../../src/common/crypto/master-keys';
import { TenantKeysService } from '../../src/common/crypto/tenant-keys.service';
import type { Metrics } from '../../src/common/metrics/metrics';
import type { RateLimiter } from '../../src/common/throttling/rate-limiter';
import type { AppConfig } from '../../src/config/app-config';
import type { ApplicationKeyResolver } from '../../src/modules/applications/application-key.resolver';
import { ApplicationsRepository } from '../../src/modules/applications/applications.repository';
import { ApplicationsService } from '../../src/modules/applications/applications.service';
import { TenantsRepository } from '../../src/modules/tenants/tenants.repository';
import { TenantsService } from '../../src/modules/tenants/tenants.service';
import { CardEnumerationRepository } from '../../src/modules/tokens/enumeration/card-enumeration.repository';
import { CardEnumerationGuard } from '../../src/modules/tokens/enumeration/card-enumeration.service';
import {
  DEFAULT_LIMITS,
  ExpressionEvaluator,
} from '../../src/modules/tokens/expressions/expression-evaluator';
import { DataKeyRotation } from '../../src/modules/tokens/rotation/data-key-rotation.service';
import { DataKeyRotationRepository } from '../../src/modules/tokens/rotation/data-key-rotation.repository';
import { TokenReads } from '../../src/modules/tokens/token-reads';
import { PublicTokenizeLimit } from '../../src/modules/tokens/tokenize/public-tokenize-limit';
import { TokenizeService } from '../../src/modules/tokens/tokenize/tokenize.service';
import { TokensRepository } from '../../src/modules/tokens/tokens.repository';
import { TokensService } from '../../src/modules/tokens/tokens.service';
import { BuyersRepository } from '../../src/modules/orchestration/buyers/buyers.repository';
import { ConnectionTokensRepository } from '../../src/modules/orchestration/buyers/connection-tokens.repository';
import { ConnectionTokensService } from '../../src/modules/orchestration/buyers/connection-tokens.service';
import { BuyersService } from '../../src/modules/orchestration/buyers/buyers.service';
import { ImportedCards } from '../../src/modules/tokens/tokenize/imported-cards';
import type { ServiceDatabase } from './service-database';

/**
 * Services of other modules that a service spec builds on, wired on the spec file's database as their
 * modules wire them: a module's repositories stay inside it (dependency-cruiser), so a spec of another
 * module reaches them through here.
 */

/** TenantsService with the real applications service and repositories; the applications repository too. */
export function tenantsOn(
  db: ServiceDatabase,
  tenantKeys: TenantKeysService = db.tenantKeys,
): { tenants: TenantsService; applications: ApplicationsRepository } {
  const applications = new ApplicationsRepository(db.dataSource);
  // Creating a tenant creates an application but resolves no key: the resolver is never asked.
  const service = new ApplicationsService(db.work, applications, {} as ApplicationKeyResolver);
  return {
    tenants: new TenantsService(db.work, new TenantsRepository(db.dataSource), service, tenantKeys),
    applications,
  };
}

/** Tenant keys under master keys of the spec's own (the last one active). */
export function tenantKeysUnder(db: ServiceDatabase, keys: MasterKey[]): TenantKeysService {
  return new TenantKeysService(
    new MasterKeyRing(keys, 'service spec'),
    new TenantsRepository(db.dataSource),
    db.work,
  );
}

/** Where the tenants' wrapped keys are kept (the tenants table), for services of other modules. */
export function tenantKeyStore(db: ServiceDatabase): TenantKeyStore {
  return new TenantsRepository(db.dataSource);
}

/** `vault keys rotate --tenant-keys` (the tokens module's) on the spec's database. */
export function dataKeyRotationOn(
  db: ServiceDatabase,
  tenantKeys: TenantKeysService = db.tenantKeys,
  clock: Clock = new SystemClock(),
): DataKeyRotation {
  return new DataKeyRotation(
    db.work,
    new DataKeyRotationRepository(),
    tenantKeys,
    new KeyRecords(db.work, new TenantsRepository(db.dataSource)),
    clock,
  );
}

/** The tokens module's services: tokenize, tokens, their reads and the card enumeration guard. */
export interface TokenServices {
  tokenizer: TokenizeService;
  tokens: TokensService;
  reads: TokenReads;
  guard: CardEnumerationGuard;
}

/** Expressions evaluated in-process (no worker thread); a limit of 10 card numbers a group. */
export function tokensOn(db: ServiceDatabase, clock: Clock): TokenServices {
  const repository = new TokensRepository(db.dataSource);
  const metrics = {
    tokensCreated: () => undefined,
    cardEnumerationRefused: () => undefined,
  } as unknown as Metrics;
  const config = { CARD_ENUMERATION_LIMIT: 10, PUBLIC_TOKENIZE_PER_MINUTE: 60 } as AppConfig;
  const guard = new CardEnumerationGuard(
    new CardEnumerationRepository(),
    db.work,
    metrics,
    config,
    db.tenantKeys,
    clock,
  );
  const evaluator = new ExpressionEvaluator({ ...DEFAULT_LIMITS, workers: 0 });
  const reads = new TokenReads(repository, db.tenantKeys, guard, db.work);
  return {
    tokenizer: new TokenizeService(
      evaluator,
      repository,
      db.tenantKeys,
      clock,
      metrics,
      guard,
      db.work,
      // Private keys only in these specs: the public tokenize limit is never reached.
      new PublicTokenizeLimit({} as RateLimiter, config),
    ),
    tokens: new TokensService(evaluator, repository, reads, db.tenantKeys, clock, guard, db.work),
    reads,
    guard,
  };
}

/**
 * What a card import writes through other modules (docs/migration.md): the tokens module's
 * `ImportedCards` and orchestration's `BuyersService`, on their real repositories (the tokens service is
 * not used by the import's part of the buyers service).
 */
export function importWritersOn(db: ServiceDatabase): {
  cards: ImportedCards;
  buyers: BuyersService;
  connectionTokens: ConnectionTokensService;
} {
  const buyers = new BuyersRepository(db.dataSource);
  const tokens = new ConnectionTokensRepository(db.dataSource);
  return {
    cards: new ImportedCards(new TokensRepository(db.dataSource)),
    buyers: new BuyersService(buyers, {} as TokensService, tokens, db.clock, db.work),
    connectionTokens: new ConnectionTokensService(tokens, buyers, db.tenantKeys, db.clock, db.work),
  };
}
