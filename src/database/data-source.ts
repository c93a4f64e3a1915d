import { Client, type ClientConfig } from 'pg';
import { DataSource, DataSourceOptions, MigrationExecutor } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { AdvisoryLocksRepository } from './advisory-locks.repository';
import { EmbeddedPostgres } from './embedded-postgres';
import { MIGRATIONS } from './migrations';

/** A TypeORM entity class; each module registers its own through `DatabaseModule.forFeature`. */
export type EntityClass = new () => object;

/** Advisory lock keys used across the service (one namespace, so that they never collide). */
export const LOCK_KEYS = {
  migrations: 72_001,
  bootstrap: 72_002,
  masterKeyChecks: 72_003,
  dataKeyRotation: 72_004,
  jobExpiredTokens: 72_101,
  jobCvcRetention: 72_102,
  jobExpiredSessions: 72_103,
  jobLogRetention: 72_104,
  jobIdempotencyRecords: 72_105,
  jobAuditCheckpoint: 72_106,
  jobRateLimits: 72_107,
  jobSettlement: 72_108,
  jobConnectionVerification: 72_109,
  jobWebhookEvents: 72_110,
  jobCardEnumeration: 72_111,
  jobWalletReplays: 72_112,
  jobRelaySettlement: 72_120,
  jobTokenImports: 72_113,
  /** First key of the two-key form `pg_advisory_xact_lock(deduplication, hash)`: one per tenant, type, fingerprint. */
  deduplication: 72_201,
  /** First key of `pg_advisory_xact_lock(flowRules, hash)`: one per tenant and flow action (its rules' positions). */
  flowRules: 72_203,
} as const;

/**
 * A TypeORM DataSource that also owns the embedded database it talks to (if any), so that
 * destroying the data source (on application shutdown) stops PGlite cleanly and flushes it.
 */
export class VaultDataSource extends DataSource {
  constructor(
    options: DataSourceOptions,
    readonly embedded?: EmbeddedPostgres,
  ) {
    super(options);
  }

  override async destroy(): Promise<void> {
    if (this.isInitialized) await super.destroy();
    await this.embedded?.stop();
  }
}

/**
 * A pg client that always listens for `error`. TypeORM's query runner removes its listener when it
 * releases a broken connection, and pg can emit another `error` on that client while it closes (for
 * example after `pg_terminate_backend` or a server shutdown): unheard, that event would end the process.
 * The failure itself still reaches the query that was running, as a rejected promise.
 */
export class ListeningClient extends Client {
  constructor(config?: string | ClientConfig) {
    super(config);
    this.on('error', () => undefined);
  }
}

export function dataSourceOptions(
  config: AppConfig,
  embedded?: EmbeddedPostgres,
  entities: EntityClass[] = [],
): DataSourceOptions {
  const connection = embedded
    ? { host: embedded.host, port: embedded.port, username: 'postgres', database: 'postgres' }
    : { url: config.DATABASE_URL };
  return {
    type: 'postgres',
    ...connection,
    entities,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    synchronize: false,
    migrationsRun: false,
    logging: false,
    extra: {
      Client: ListeningClient,
      // PGlite has one backend: a single pooled connection keeps each transaction whole.
      max: embedded ? 1 : config.DB_POOL_SIZE,
      connectionTimeoutMillis: 15_000,
      idleTimeoutMillis: 30_000,
    },
  };
}

/**
 * Builds the one data source of the process (app, CLI and ormconfig.ts all come through here). Without
 * entities (migrations, raw SQL) it still serves everything but `getRepository`.
 */
export async function createDataSource(
  config: AppConfig,
  entities: EntityClass[] = [],
): Promise<VaultDataSource> {
  const embedded = config.embedded ? await EmbeddedPostgres.start(config.DATA_DIR, config.role) : undefined;
  return new VaultDataSource(dataSourceOptions(config, embedded, entities), embedded);
}

/**
 * Runs pending migrations in one transaction that first takes an advisory lock, so that several instances
 * starting together on one empty database apply each migration exactly once (the others wait, then find
 * none pending).
 */
export async function runMigrations(dataSource: DataSource): Promise<string[]> {
  return new AdvisoryLocksRepository(dataSource).whileLocked(LOCK_KEYS.migrations, async (runner) => {
    const executor = new MigrationExecutor(dataSource, runner);
    executor.transaction = 'all';
    const applied = await executor.executePendingMigrations();
    return applied.map((m) => m.name);
  });
}

/** Opens the data source and brings its schema up to date. */
export async function openDatabase(
  config: AppConfig,
  entities: EntityClass[] = [],
): Promise<VaultDataSource> {
  const dataSource = await createDataSource(config, entities);
  try {
    await dataSource.initialize();
    await runMigrations(dataSource);
    return dataSource;
  } catch (error) {
    await dataSource.destroy().catch(() => undefined);
    throw error;
  }
}
