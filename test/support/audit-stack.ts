import { AuditChainRepository } from '../../src/common/audit/audit-chain.repository';
import { AuditChainService } from '../../src/common/audit/audit-chain.service';
import { AuditCheckpointer } from '../../src/common/audit/audit-checkpointer.service';
import { AuditProofs } from '../../src/common/audit/audit-proofs.service';
import { AuditSigningKeysRepository } from '../../src/common/audit/audit-signing-keys.repository';
import { AuditSigningKeys } from '../../src/common/audit/audit-signing-keys.service';
import { AuditTreeRepository } from '../../src/common/audit/audit-tree.repository';
import { AuditVerifier } from '../../src/common/audit/audit-verifier.service';
import type { AuditEntry } from '../../src/common/audit/audit.types';
import { logLeafHash, logObject, type LogColumns } from '../../src/common/audit/log-object';
import { TreeFrontier } from '../../src/common/audit/tree/merkle';
import { MasterKeyRing, type MasterKey } from '../../src/common/crypto/master-keys';
import { ExclusiveJobRunner } from '../../src/common/jobs/exclusive';
import { JobRunsRepository } from '../../src/common/jobs/job-runs.repository';
import type { ShutdownState } from '../../src/common/lifecycle/shutdown-state';
import type { Metrics } from '../../src/common/metrics/metrics';
import type { AppConfig } from '../../src/config/app-config';
import type { ServiceDatabase } from './service-database';
import { StoppedClock } from './stopped-clock';

/** What the audit services read of the configuration. */
export interface AuditConfig {
  AUDIT_CHECKPOINT_SECONDS: number;
  LOG_RETENTION_DAYS: number;
  AUDIT_SIGNING_KEY?: string;
  publicBaseUrl: string;
}

export const MASTER_V1: MasterKey = { version: 'v1', key: Buffer.alloc(32, 1) };
export const MASTER_V2: MasterKey = { version: 'v2', key: Buffer.alloc(32, 2) };

/** The audit log's services on a spec file's database, as AuditModule wires them, on a stopped clock. */
export interface AuditStack {
  clock: StoppedClock;
  config: AuditConfig & AppConfig;
  trees: AuditTreeRepository;
  signingKeyRows: AuditSigningKeysRepository;
  keys: AuditSigningKeys;
  jobs: ExclusiveJobRunner;
  checkpointer: AuditCheckpointer;
  proofs: AuditProofs;
  chain: AuditChainService;
  verifier: AuditVerifier;
  /** Appends what has committed and signs the checkpoints due, a checkpoint period after the last run. */
  checkpoint(): Promise<number | undefined>;
}

/**
 * Builds the stack: the real repositories, job runner (its advisory lock and `job_runs` claims) and
 * services; a request context, metrics and the shutdown registry that do nothing. `ring` is the master
 * keys the signing keys' seeds are sealed under (a second stack with another ring is another service).
 */
export function auditStack(
  db: ServiceDatabase,
  options: { config?: Partial<AuditConfig>; ring?: MasterKey[]; clock?: StoppedClock } = {},
): AuditStack {
  const clock = options.clock ?? new StoppedClock();
  const config = {
    AUDIT_CHECKPOINT_SECONDS: 5,
    LOG_RETENTION_DAYS: 365,
    publicBaseUrl: 'https://vault.example:8443',
    embedded: false,
    ...options.config,
  } as AuditConfig & AppConfig;
  const ring = new MasterKeyRing(options.ring ?? [MASTER_V1], 'audit spec');
  const trees = new AuditTreeRepository(db.dataSource);
  const signingKeyRows = new AuditSigningKeysRepository(db.dataSource);
  const keys = new AuditSigningKeys(signingKeyRows, config, ring, clock, db.work);
  const metrics = { jobRan: () => undefined, jobFailed: () => undefined } as unknown as Metrics;
  const shutdown = { register: () => undefined } as unknown as ShutdownState;
  const jobs = new ExclusiveJobRunner(
    db.work,
    clock,
    new JobRunsRepository(db.dataSource),
    config,
    metrics,
    shutdown,
    ring,
  );
  const checkpointer = new AuditCheckpointer(trees, keys, jobs, clock, config);
  const chain = new AuditChainService(new AuditChainRepository(db.dataSource));
  return {
    clock,
    config,
    trees,
    signingKeyRows,
    keys,
    jobs,
    checkpointer,
    proofs: new AuditProofs(trees),
    chain,
    verifier: new AuditVerifier(trees, chain, keys, clock, config),
    checkpoint: () => {
      clock.advance(config.AUDIT_CHECKPOINT_SECONDS * 1000);
      return checkpointer.run();
    },
  };
}

/**
 * Writes `n` audit rows of the tenant in one change, as a service's write does (`change.audit`), by an
 * application of its; answers their ids in the order written.
 */
export async function writeAuditRows(
  db: ServiceDatabase,
  tenantId: string,
  n: number,
  entry: Partial<AuditEntry> = {},
): Promise<string[]> {
  const entries: AuditEntry[] = Array.from({ length: n }, (_, i) => ({
    entityType: 'token',
    entityId: `tok_${i}`,
    operation: 'create',
    message: `Token created ${i}`,
    ...entry,
  }));
  const before = await db.rows<{ pos: string }>(
    'SELECT coalesce(max(pos), 0)::text AS pos FROM audit_logs WHERE tenant_id = $1',
    [tenantId],
  );
  await db.work.transaction(
    { actor: { tenantId, applicationId: '00000000-0000-4000-8000-00000000a991' } },
    async (change) => change.audit(...entries),
  );
  const rows = await db.rows<{ id: string }>(
    'SELECT id FROM audit_logs WHERE tenant_id = $1 AND pos > $2 ORDER BY pos',
    [tenantId, before[0].pos],
  );
  return rows.map((row) => row.id);
}

/** The leaf hashes of the tenant's appended rows, in leaf order, as the rows give them now. */
export async function leafHashesOfRows(db: ServiceDatabase, tenantId: string): Promise<Buffer[]> {
  const rows = await db.rows<LogColumns>(
    `SELECT a.id, a.tenant_id, a.actor_id, a.actor_type, a.entity_type, a.entity_id, a.operation,
            a.message, a.created_at
       FROM audit_logs AS a JOIN audit_leaves AS l ON l.tenant_id = a.tenant_id AND l.row_id = a.id
      WHERE a.tenant_id = $1 ORDER BY l.leaf_index`,
    [tenantId],
  );
  return rows.map((row) => logLeafHash(logObject(row)));
}

/** The root of the first `size` of these leaf hashes. */
export function rootOf(leaves: Buffer[], size = leaves.length): Buffer | undefined {
  const frontier = new TreeFrontier();
  for (const leaf of leaves.slice(0, size)) frontier.append(leaf);
  return frontier.root();
}
