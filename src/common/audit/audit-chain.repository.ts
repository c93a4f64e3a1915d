import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { cursorTimeSql } from '../pagination/cursor-pagination';
import { GenerateSql } from '../../database/generate-sql';
import { SqlParams } from '../../database/sql';
import { columnsOf, insertOf, type RowOf } from '../../database/table';
import { AuditChainHeadEntity } from './entities/audit-chain-head.entity';
import { AuditLogEntity } from './entities/audit-log.entity';
import type { Change } from '../unit-of-work/change';

/** An audit log row as the chain hashes it: every field exactly as stored, `created_at` as text. */
export type ChainRow = Omit<RowOf<AuditLogEntity>, 'created_at'> & { created_text: string };

/** The last sealed position of a tenant's chain. */
export interface ChainHead {
  tenantId: string;
  seq: number;
  hash: Buffer;
}

/** A row's place in its chain. */
export interface ChainSeal {
  id: string;
  seq: number;
  prevHash: Buffer;
  hash: Buffer;
}

const COLUMNS = `${columnsOf(AuditLogEntity, undefined, { except: ['created_at'] })}, ${cursorTimeSql('created_at')} AS created_text`;
const HEAD_COLUMNS = columnsOf(AuditChainHeadEntity);

const EXAMPLE_TENANT = '00000000-0000-4000-8000-000000000001';
const EXAMPLE_ROW = '00000000-0000-4000-8000-000000000002';

type HeadRow = RowOf<AuditChainHeadEntity>;

const head = (row: HeadRow): ChainHead => ({ tenantId: row.tenant_id, seq: Number(row.seq), hash: row.hash });

/**
 * The hash chain over `audit_logs` and its heads (`audit_chain_heads`). Sealing runs in the job's change
 * (which holds the job's lock); verifying reads through the pool.
 */
@Injectable()
export class AuditChainRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Tenants with rows not sealed yet, at most `limit` of them. */
  @GenerateSql({ change: true, params: [1000] })
  async tenantsWithUnsealedRows(change: Change, limit: number): Promise<string[]> {
    const rows = await change.query<{ tenant_id: string }>(
      'SELECT DISTINCT tenant_id FROM audit_logs WHERE seq IS NULL LIMIT $1',
      [limit],
    );
    return rows.map((row) => row.tenant_id);
  }

  /** A tenant's head, as the sealing change sees it. */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT] })
  async head(change: Change, tenantId: string): Promise<ChainHead | undefined> {
    const rows = await change.query<HeadRow>(
      `SELECT ${HEAD_COLUMNS} FROM audit_chain_heads WHERE tenant_id = $1`,
      [tenantId],
    );
    return rows.map(head)[0];
  }

  /** The heads of every chain, or of one tenant's, by tenant. */
  @GenerateSql({ name: 'heads', params: [] }, { name: 'headsOfTenant', params: [EXAMPLE_TENANT] })
  async heads(tenantId?: string): Promise<ChainHead[]> {
    const rows: HeadRow[] = await this.dataSource.query(
      `SELECT ${HEAD_COLUMNS} FROM audit_chain_heads${tenantId ? ' WHERE tenant_id = $1' : ''} ORDER BY tenant_id`,
      tenantId ? [tenantId] : [],
    );
    return rows.map(head);
  }

  /** A tenant's oldest rows not sealed yet, in the order they are chained. */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, 2000] })
  unsealedRows(change: Change, tenantId: string, limit: number): Promise<ChainRow[]> {
    return change.query<ChainRow>(
      `SELECT ${COLUMNS} FROM audit_logs WHERE tenant_id = $1 AND seq IS NULL ORDER BY created_at, id LIMIT $2`,
      [tenantId, limit],
    );
  }

  /** A tenant's sealed rows after position `afterSeq`, in chain order. */
  @GenerateSql({ params: [EXAMPLE_TENANT, 0, 5000] })
  sealedRowsAfter(tenantId: string, afterSeq: number, limit: number): Promise<ChainRow[]> {
    return this.dataSource.query(
      `SELECT ${COLUMNS} FROM audit_logs WHERE tenant_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [tenantId, afterSeq, limit],
    );
  }

  /** Writes the rows' places (one statement) and moves the tenant's head to `head`. */
  @GenerateSql({
    change: true,
    params: [
      EXAMPLE_TENANT,
      [{ id: EXAMPLE_ROW, seq: 1, prevHash: Buffer.alloc(32), hash: Buffer.alloc(32, 7) }],
      { seq: 1, hash: Buffer.alloc(32, 7) },
    ],
  })
  async seal(
    change: Change,
    tenantId: string,
    seals: ChainSeal[],
    head: { seq: number; hash: Buffer },
  ): Promise<void> {
    const p = new SqlParams();
    const tenant = p.add(tenantId);
    const values = seals.map(
      (s) =>
        `(${p.add(s.id)}::uuid, ${p.add(s.seq)}::bigint, ${p.add(s.prevHash)}::bytea, ${p.add(s.hash)}::bytea)`,
    );
    await change.query(
      `UPDATE audit_logs AS a SET seq = v.seq, prev_hash = v.prev_hash, hash = v.hash
         FROM (VALUES ${values.join(', ')}) AS v(id, seq, prev_hash, hash)
        WHERE a.tenant_id = ${tenant}::uuid AND a.id = v.id AND a.seq IS NULL`,
      p.values,
    );
    const moved = insertOf(AuditChainHeadEntity, {
      tenant_id: tenantId,
      seq: String(head.seq),
      hash: head.hash,
    });
    await change.query(
      `${moved.sql}
       ON CONFLICT (tenant_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash`,
      moved.params,
    );
  }
}
