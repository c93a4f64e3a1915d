import { AuditLogReadsRepository } from '../../common/audit/audit-log-reads.repository';
import {
  auditStack,
  leafHashesOfRows,
  rootOf,
  writeAuditRows,
  type AuditStack,
} from '../../../test/support/audit-stack';
import {
  openServiceDatabase,
  principalOf,
  type ServiceDatabase,
} from '../../../test/support/service-database';
import type { Principal } from '../../common/auth/principal';
import { ValidationException } from '../../common/errors/domain.exception';
import type { RetentionJob, RetentionPolicy } from '../../common/jobs/retention.job';
import type { ListLogsQueryDto } from './dto/log.dto';
import { LogsErrorCode } from './logs.errors';
import { LogsService } from './logs.service';

/** The standalone verifier a tenant runs (examples/verify-audit): the proofs are checked as it checks them. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const independent = require('../../../examples/verify-audit/verify-audit') as {
  verifyInclusion(hash: Buffer, index: number, size: number, path: Buffer[], root: Buffer): boolean;
  verifyConsistency(
    first: number,
    second: number,
    firstRoot: Buffer,
    secondRoot: Buffer,
    path: Buffer[],
  ): boolean;
};

/**
 * The audit log as a tenant reads it, on the real SQL: its own rows only, newest first, filtered and
 * paged by cursor or by number; its checkpoints, and proofs that its rows are in them; retention. Reading
 * writes no audit row.
 */
let db: ServiceDatabase;
let audit: AuditStack;
let service: LogsService;
let retention: RetentionPolicy;
let tenant: string;
let who: Principal;
let other: Principal;
/** The tenant's rows, newest first. */
let newestFirst: string[];

const b64 = (s: string) => Buffer.from(s, 'base64');
const query = (q: Partial<ListLogsQueryDto> = {}): ListLogsQueryDto => ({ size: 20, ...q });

beforeAll(async () => {
  db = await openServiceDatabase();
  audit = auditStack(db);
  const jobs = { register: (policy: RetentionPolicy) => (retention = policy) } as unknown as RetentionJob;
  service = new LogsService(
    new AuditLogReadsRepository(db.dataSource),
    audit.config,
    jobs,
    audit.trees,
    audit.proofs,
    audit.keys,
  );
  service.onModuleInit();
  tenant = await db.newTenant('mine');
  who = principalOf(tenant, ['log:read']);
  other = principalOf(await db.newTenant('other'), ['log:read']);
  // Rows a second apart: two tokens, a card, an application; the other tenant's between them.
  const ids: string[] = [];
  ids.push(...(await writeAuditRows(db, tenant, 2)));
  db.clock.advance(1_000);
  await writeAuditRows(db, other.tenantId, 3);
  db.clock.advance(1_000);
  ids.push(...(await writeAuditRows(db, tenant, 1, { entityId: 'tok_card', tokenType: 'card' })));
  db.clock.advance(1_000);
  ids.push(
    ...(await writeAuditRows(db, tenant, 1, {
      entityType: 'application',
      entityId: 'app_1',
      operation: 'update',
      message: 'Application updated',
    })),
  );
  db.clock.reset();
  const order = await db.rows<{ id: string }>(
    'SELECT id FROM audit_logs WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC',
    [tenant],
  );
  newestFirst = order.map((r) => r.id);
  expect(new Set(newestFirst)).toEqual(new Set(ids));
});
afterAll(() => db.close());

const auditRows = async () =>
  Number((await db.rows<{ n: string }>('SELECT count(*) AS n FROM audit_logs'))[0].n);

describe('list', () => {
  it("answers the tenant's own rows, newest first, as log objects", async () => {
    const page = await service.list(who, query());
    expect(page.data.map((l) => l.id)).toEqual(newestFirst);
    expect(page.pagination).toEqual({ page_size: 20 });
    expect(page.data[0]).toEqual({
      id: newestFirst[0],
      tenant_id: tenant,
      actor_id: '00000000-0000-4000-8000-00000000a991',
      actor_type: 'application',
      entity_type: 'application',
      entity_id: 'app_1',
      operation: 'update',
      message: 'Application updated',
      created_at: expect.stringMatching(/Z$/) as string,
    });
    expect((await service.list(other, query())).data.every((l) => l.tenant_id === other.tenantId)).toBe(true);
  });

  it('filters by entity type (card: the rows of card tokens), entity and dates', async () => {
    const ids = async (q: Partial<ListLogsQueryDto>) =>
      (await service.list(who, query(q))).data.map((l) => l.id);
    expect(await ids({ entity_type: 'application' })).toEqual([newestFirst[0]]);
    expect(await ids({ entity_type: 'card' })).toEqual([newestFirst[1]]);
    expect(await ids({ entity_type: 'token' })).toEqual(newestFirst.slice(1));
    expect(await ids({ entity_id: 'tok_card' })).toEqual([newestFirst[1]]);
    const [{ created_at: middle }] = await db.rows<{ created_at: Date }>(
      'SELECT created_at FROM audit_logs WHERE id = $1',
      [newestFirst[1]],
    );
    expect(await ids({ start_date: middle.toISOString() })).toEqual(newestFirst.slice(0, 2));
    expect(await ids({ end_date: middle.toISOString() })).toEqual(newestFirst.slice(2));
  });

  it('pages by cursor: each page follows the last, the last has no cursor', async () => {
    const first = await service.list(who, query({ size: 3 }));
    expect(first.data.map((l) => l.id)).toEqual(newestFirst.slice(0, 3));
    const second = await service.list(who, query({ size: 3, start: first.pagination.after }));
    expect(second.data.map((l) => l.id)).toEqual(newestFirst.slice(3));
    expect(second.pagination.after).toBeUndefined();
  });

  it('pages by number, with totals', async () => {
    const page = await service.list(who, query({ size: 3, page: 2 }));
    expect(page.data.map((l) => l.id)).toEqual(newestFirst.slice(3));
    expect(page.pagination).toEqual({ page_size: 3, total_items: 4, page_number: 2, total_pages: 2 });
  });

  it('refuses a cursor and a page number together, and a cursor that is not one', async () => {
    await expect(service.list(who, query({ page: 1, start: 'x' }))).rejects.toMatchObject({
      code: LogsErrorCode.BadRequest,
    });
    await expect(service.list(who, query({ start: 'not-a-cursor' }))).rejects.toThrow();
  });

  it('writes no audit row', async () => {
    const before = await auditRows();
    await service.list(who, query());
    expect(await auditRows()).toBe(before);
  });
});

describe('checkpoints and proofs', () => {
  let first: number;

  it('has no checkpoint before the first (no_checkpoint), then answers the latest', async () => {
    await expect(service.checkpoint(who)).rejects.toMatchObject({ code: LogsErrorCode.NoCheckpoint });
    await audit.checkpoint();
    const checkpoint = await service.checkpoint(who);
    first = checkpoint.tree_size;
    expect(checkpoint).toEqual({
      origin: `vault.example:8443/audit/${tenant}`,
      tree_size: 4,
      root_hash: rootOf(await leafHashesOfRows(db, tenant))!.toString('base64'),
      created_at: audit.clock.now().toISOString(),
      note: expect.stringContaining(`vault.example:8443/audit/${tenant}\n4\n`) as string,
    });
    expect((await service.checkpoint(other)).tree_size).toBe(3);
  });

  it('lists the signing keys', async () => {
    expect(await service.signingKeys()).toEqual(await audit.keys.published());
    expect(await service.signingKeys()).toHaveLength(1);
  });

  it('proves a row in the latest checkpoint, or in one given by its size', async () => {
    await writeAuditRows(db, tenant, 3);
    await audit.checkpoint();
    const leaves = await leafHashesOfRows(db, tenant);
    const [row] = await db.rows<{ leaf_index: string }>(
      'SELECT leaf_index::text FROM audit_leaves WHERE tenant_id = $1 AND row_id = $2',
      [tenant, newestFirst[1]],
    );
    const index = Number(row.leaf_index);
    const latest = await service.proof(who, newestFirst[1].toUpperCase(), {});
    expect(latest).toMatchObject({ leaf_index: index, tree_size: 7, log: { id: newestFirst[1] } });
    const path = latest.inclusion_path.map(b64);
    expect(independent.verifyInclusion(leaves[index], index, 7, path, rootOf(leaves)!)).toBe(true);
    const old = await service.proof(who, newestFirst[1], { tree_size: first });
    expect(
      independent.verifyInclusion(
        leaves[index],
        index,
        first,
        old.inclusion_path.map(b64),
        rootOf(leaves, first)!,
      ),
    ).toBe(true);
  });

  it('proves the older checkpoint a prefix of the newer', async () => {
    const leaves = await leafHashesOfRows(db, tenant);
    const proof = await service.consistency(who, { first, second: 7 });
    expect(proof).toMatchObject({ first, second: 7 });
    expect(
      independent.verifyConsistency(
        first,
        7,
        rootOf(leaves, first)!,
        rootOf(leaves)!,
        proof.consistency_path.map(b64),
      ),
    ).toBe(true);
  });

  it("is not_found for another tenant's row, an unknown one, or an id that is not a uuid", async () => {
    const [theirs] = await db.rows<{ id: string }>('SELECT id FROM audit_logs WHERE tenant_id = $1 LIMIT 1', [
      other.tenantId,
    ]);
    for (const id of [theirs.id, '00000000-0000-4000-8000-00000000dead', 'log_1'])
      await expect(service.proof(who, id, {})).rejects.toMatchObject({ code: LogsErrorCode.NotFound });
  });

  it('is not_yet_checkpointed, with Retry-After, for a row not in a checkpoint yet', async () => {
    const [id] = await writeAuditRows(db, tenant, 1);
    const refused = { code: LogsErrorCode.NotYetCheckpointed, headers: { 'Retry-After': '5' } };
    await expect(service.proof(who, id, {})).rejects.toMatchObject(refused);
    await expect(service.proof(who, id, { tree_size: 7 })).rejects.toMatchObject(refused);
    // Appended but not signed yet: still not in a checkpoint.
    await audit.checkpointer.run();
    await expect(service.proof(who, id, {})).rejects.toMatchObject(refused);
  });

  it('refuses a size that is not a checkpoint, or one too small to hold the row, naming the field', async () => {
    const field = (name: string) =>
      expect.objectContaining({ errors: { [name]: [expect.any(String)] } }) as unknown;
    await expect(service.proof(who, newestFirst[1], { tree_size: 5 })).rejects.toEqual(field('tree_size'));
    const [late] = await db.rows<{ row_id: string }>(
      'SELECT row_id FROM audit_leaves WHERE tenant_id = $1 AND leaf_index = 6',
      [tenant],
    );
    await expect(service.proof(who, late.row_id, { tree_size: first })).rejects.toBeInstanceOf(
      ValidationException,
    );
    await expect(service.consistency(who, { first: 7, second: first })).rejects.toEqual(field('first'));
    await expect(service.consistency(who, { first: 2, second: 7 })).rejects.toEqual(field('first'));
    await expect(service.consistency(who, { first, second: 6 })).rejects.toEqual(field('second'));
    // Another tenant's checkpoint sizes are not this tenant's.
    await expect(service.consistency(other, { first, second: 7 })).rejects.toEqual(field('first'));
  });
});

describe('entity types and retention', () => {
  it('lists the entity types a log can be filtered by', () => {
    const types = service.entityTypes();
    expect(types).toContainEqual({ display_name: 'Card', value: 'card' });
    expect(types.map((t) => t.value)).toContain('flow_rule');
  });

  it('registers an hourly retention that deletes rows past LOG_RETENTION_DAYS once appended', async () => {
    expect(retention).toMatchObject({ name: 'log-retention', periodMs: 3_600_000 });
    // A row not appended yet stays, however old: the tree must take it first.
    const [pending] = await writeAuditRows(db, tenant, 1);
    const now = new Date(Date.now() + (audit.config.LOG_RETENTION_DAYS + 1) * 86_400_000);
    const [{ n: appended }] = await db.rows<{ n: number }>(
      'SELECT count(*)::int AS n FROM audit_logs a JOIN audit_leaves l ON l.row_id = a.id',
    );
    const deleted = await db.work.transaction({}, (change) => retention.purge(change, now));
    expect(deleted).toBe(appended);
    // The tree keeps the hashes: the checkpoint still answers, the appended rows are gone.
    expect((await service.checkpoint(who)).tree_size).toBe(7);
    expect((await service.list(who, query())).data.map((l) => l.id)).toEqual([pending]);
  });
});
