import 'reflect-metadata';
import { PGlite } from '@electric-sql/pglite';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { duplexPair, type Duplex } from 'node:stream';
import { DataSource } from 'typeorm';
import { AuditLogsRepository } from '../../src/common/audit/audit-logs.repository';
import { AuditTrail } from '../../src/common/audit/audit-trail.service';
import { EVENT_TYPES, type EventOutbox } from '../../src/common/events/event-outbox';
import type { Principal } from '../../src/common/auth/principal';
import { MasterKeyRing } from '../../src/common/crypto/master-keys';
import { TenantKeysService } from '../../src/common/crypto/tenant-keys.service';
import { Clock } from '../../src/common/jobs/clock';
import { UnitOfWork } from '../../src/common/unit-of-work/unit-of-work';
import { type EntityClass, ListeningClient, runMigrations } from '../../src/database/data-source';
import { MIGRATIONS } from '../../src/database/migrations';
import { DeliveryNudge } from '../../src/modules/webhooks/delivery/delivery-nudge';
import { WebhookOutbox } from '../../src/modules/webhooks/webhook-outbox';
import { WebhookEventsRepository } from '../../src/modules/webhooks/webhook-events.repository';
import { TenantsRepository } from '../../src/modules/tenants/tenants.repository';
import type { RetentionJob } from '../../src/common/jobs/retention.job';
import { IdempotencyRepository } from '../../src/modules/idempotency/idempotency.repository';
import { IdempotencyService } from '../../src/modules/idempotency/idempotency.service';
import { RequestClaim } from '../../src/modules/idempotency/request-claim';

/**
 * The service tier's database: the real schema on an in-process PGlite, reached by the real `pg` driver
 * through a pair of in-memory streams instead of a socket (the quick tier opens none, no-sockets.ts). So a
 * service spec runs its real repositories, the real `UnitOfWork` (transactions, rollbacks, one-statement
 * changes, audit rows, the outbox, idempotency records) and the same result parsing as production's
 * embedded mode, where a hand-written fake would drift from the SQL.
 *
 * The migrated database is built once (initdb and every migration take seconds) and kept as a tarball
 * under the system's temporary directory, named by a digest of the migrations and the PGlite version:
 * a later run, or another worker, loads it instead. Each Jest worker starts one PGlite from it and puts it
 * back to the image before each spec file (service-environment.ts).
 */

const SRC = join(__dirname, '..', '..', 'src');
const MIGRATIONS_DIR = join(SRC, 'database', 'migrations');

/** What names one image: the migrations' text and the PGlite release that wrote it. */
function imageDigest(): string {
  const digest = createHash('sha256');
  const pglite = JSON.parse(
    readFileSync(join(require.resolve('@electric-sql/pglite'), '..', '..', 'package.json'), 'utf8'),
  ) as { version: string };
  digest.update(pglite.version);
  for (const file of readdirSync(MIGRATIONS_DIR).sort())
    digest.update(file).update(readFileSync(join(MIGRATIONS_DIR, file)));
  return digest.digest('hex').slice(0, 16);
}

/**
 * The PostgreSQL frontend protocol's framing: the startup message is its length then its body; every
 * later message a type byte, then its length (which counts itself but not the type byte).
 */
function messageLength(buffer: Buffer, startup: boolean): number | undefined {
  if (startup) return buffer.length >= 4 ? buffer.readInt32BE(0) : undefined;
  return buffer.length >= 5 ? 1 + buffer.readInt32BE(1) : undefined;
}

/**
 * Serves one `pg` connection from `db` over `end`: each complete message goes to PGlite's protocol
 * handler, in order, and its answer back. What PGLiteSocketServer does for a socket, without one.
 * PGlite is one session for every connection: a new one starts without the named statements an
 * earlier one prepared (as a new session of a server would), or a pool that replaced a connection
 * after a failed transaction would find its statements' names taken.
 */
function serve(db: PGlite, end: Duplex): void {
  let buffered = Buffer.alloc(0);
  let startup = true;
  let queue: Promise<unknown> = db.exec('DEALLOCATE ALL');
  end.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    const messages: Uint8Array[] = [];
    for (;;) {
      const length = messageLength(buffered, startup);
      if (length === undefined || buffered.length < length) break;
      messages.push(new Uint8Array(buffered.subarray(0, length)));
      buffered = buffered.subarray(length);
      startup = false;
    }
    queue = queue.then(async () => {
      for (const message of messages) {
        const answer = await db.execProtocolRaw(message);
        if (answer.length && !end.destroyed) end.write(answer);
      }
    });
  });
}

/** A stream dressed as the socket `pg` expects (what its connection calls of one). */
function inMemoryConnection(db: PGlite): Duplex {
  const [client, server] = duplexPair();
  serve(db, server);
  return Object.assign(client, {
    setNoDelay: () => client,
    setKeepAlive: () => client,
    ref: () => client,
    unref: () => client,
    connect: () => {
      process.nextTick(() => client.emit('connect'));
      return client;
    },
  });
}

/** Every entity class under src/ (each `*.entity.ts`), as the modules register them in the application. */
async function allEntities(): Promise<EntityClass[]> {
  const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((f) =>
    f.endsWith('.entity.ts'),
  );
  const modules = await Promise.all(
    files.map((file) => import(join(SRC, file)) as Promise<Record<string, unknown>>),
  );
  return modules.flatMap((exported) =>
    Object.values(exported).filter((value): value is EntityClass => typeof value === 'function'),
  );
}

/** A data source over `db` through one in-memory connection (the embedded mode's pool of one). */
function dataSourceOver(db: PGlite, entities: EntityClass[] = []): DataSource {
  return new DataSource({
    type: 'postgres',
    database: 'postgres',
    username: 'postgres',
    entities,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    synchronize: false,
    logging: false,
    extra: { Client: ListeningClient, max: 1, stream: () => inMemoryConnection(db) },
  });
}

/** The migrated image's tarball: built and kept on first use; its path. */
async function migratedImage(): Promise<string> {
  const path = join(tmpdir(), `vault-service-db-${imageDigest()}.tar`);
  if (!existsSync(path)) {
    const db = await PGlite.create();
    const dataSource = dataSourceOver(db);
    await dataSource.initialize();
    await runMigrations(dataSource);
    await dataSource.destroy();
    const image = await db.dumpDataDir('none');
    await db.close();
    // Written aside then renamed: a worker building it at the same time never reads half a file.
    const partial = `${path}.${process.pid}`;
    writeFileSync(partial, Buffer.from(await image.arrayBuffer()));
    renameSync(partial, path);
  }
  return path;
}

/**
 * The spec file's PGlite: the worker's, put back to the image (service-environment.ts, the service
 * project's environment); where a spec runs under another environment, one of its own.
 */
async function pgliteFor(image: string): Promise<{ db: PGlite; own: boolean }> {
  const shared = (globalThis as Record<symbol, unknown>)[Symbol.for('vault.serviceDatabase')] as
    ((image: string) => Promise<PGlite>) | undefined;
  if (shared) return { db: await shared(image), own: false };
  return { db: await PGlite.create({ loadDataDir: new Blob([readFileSync(image)]) }), own: true };
}

/** One spec file's database: a fresh copy of the migrated image, and the unit of work on it. */
export interface ServiceDatabase {
  readonly dataSource: DataSource;
  readonly clock: Clock;
  readonly work: UnitOfWork;
  /** The tenants' keys, under a master key of this database's own. */
  readonly tenantKeys: TenantKeysService;
  /** Another key service on the same keys, its cache empty. */
  /** A tenant keys service with an empty cache (over `over`, a ring holding the same key, if given). */
  freshTenantKeys(over?: MasterKeyRing): TenantKeysService;
  /** A new tenant (its row and wrapped root key, nothing else); its id. */
  newTenant(name?: string, id?: string): Promise<string>;
  /**
   * An enabled webhook of the tenant's subscribed to every event type: without one the outbox writes no
   * event (nothing would deliver it), so a spec that reads the events it recorded subscribes first.
   */
  subscribe(tenantId: string): Promise<void>;
  /**
   * The claim of a request with `BT-IDEMPOTENCY-KEY: key`, as the idempotency interceptor takes it (the
   * record `processing` in the database) and hands it to the handler's origin: the change that answers
   * stores the response in `idempotency_records` (the result as JSON, status 201).
   */
  claim(who: Principal, key: string, body?: unknown): Promise<RequestClaim>;
  /** Rows as the database holds them (for assertions), outside any change. */
  rows<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

/**
 * Opens a database for a spec file: call it in `beforeAll` (and `close` in `afterAll`). Its clock is the
 * audit trail's and the outbox's; a spec hands the same one to the service it builds. Measured (2 cores,
 * quiet): 0.7 s to start the worker's PGlite from the image, 0.05 to 0.15 s to put it back for a later
 * file; building the image on a machine's first run, 15 s more.
 */
export async function openServiceDatabase(): Promise<ServiceDatabase> {
  const { db, own } = await pgliteFor(await migratedImage());
  const dataSource = dataSourceOver(db, await allEntities());
  await dataSource.initialize();
  const clock = new Clock();
  const outbox: EventOutbox = new WebhookOutbox(clock, new DeliveryNudge(), new WebhookEventsRepository());
  const work = new UnitOfWork(dataSource, new AuditTrail(new AuditLogsRepository(), clock), outbox);
  const tenants = new TenantsRepository(dataSource);
  const ring = new MasterKeyRing([{ version: 'v1', key: Buffer.alloc(32, 9) }], 'service spec');
  const tenantKeys = new TenantKeysService(ring, tenants, work);
  return {
    dataSource,
    clock,
    work,
    tenantKeys,
    freshTenantKeys: (over = ring) => new TenantKeysService(over, tenants, work),
    newTenant: async (name = 'tenant', id = randomUUID()) => {
      await work.transaction({}, (change) =>
        tenants.insert(change, { id, name, ...tenantKeys.newTenantKey(id), createdAt: clock.now() }),
      );
      return id;
    },
    claim: async (who, key, body = null) => {
      const idempotency = new IdempotencyService(new IdempotencyRepository(dataSource), tenantKeys, clock, {
        register: () => undefined,
      } as unknown as RetentionJob);
      const scope = await idempotency.scopeFor(who, key, { method: 'POST', path: '/spec', body });
      const outcome = await idempotency.claim(scope);
      if (outcome.kind !== 'claimed') throw new Error(`the key ${key} was not claimed: ${outcome.kind}`);
      return new RequestClaim(idempotency, scope, outcome.claimId, outcome.resumed, (result) => ({
        status: 201,
        headers: {},
        body: Buffer.from(JSON.stringify(result ?? null)),
      }));
    },
    subscribe: async (tenantId) => {
      await dataSource.query(
        `INSERT INTO webhooks (tenant_id, id, name, url, events, status, secret)
         VALUES ($1, $2, 'every event', 'https://hooks.test/', $3, 'enabled', '\\x00')`,
        [tenantId, randomUUID(), EVENT_TYPES],
      );
    },
    rows: <T>(sql: string, params: unknown[] = []) => dataSource.query<T[]>(sql, params),
    close: async () => {
      await dataSource.destroy();
      if (own) await db.close();
    },
  };
}

/** A private application's principal of `tenantId` holding `permissions`, as the guards resolve one. */
export function principalOf(
  tenantId: string,
  permissions: string[] = [],
  applicationId = randomUUID(),
): Principal {
  return {
    tenantId,
    applicationId,
    applicationType: 'private',
    keyKind: 'private',
    keyId: 'service-spec',
    authorized: true,
    permissions,
    rules: [],
  };
}
