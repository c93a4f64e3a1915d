import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { cursorTimeSql } from '../pagination/cursor-pagination';
import { GenerateSql } from '../../database/generate-sql';
import { columnsOf, type RowOf, queryRows } from '../../database/table';
import { AuditChainHeadEntity } from './entities/audit-chain-head.entity';
import { AuditLogEntity } from './entities/audit-log.entity';

/** An audit log row as the chain hashes it: every field exactly as stored, `created_at` as text. */
export type ChainRow = Omit<RowOf<AuditLogEntity>, 'created_at'> & { created_text: string };

/** The last sealed position of a tenant's chain. */
export interface ChainHead {
  tenantId: string;
  seq: number;
  hash: Buffer;
}

const COLUMNS = `${columnsOf(AuditLogEntity, undefined, { except: ['created_at'] })}, ${cursorTimeSql('created_at')} AS created_text`;
const HEAD_COLUMNS = columnsOf(AuditChainHeadEntity);

const EXAMPLE_TENANT = '00000000-0000-4000-8000-000000000001';

type HeadRow = RowOf<AuditChainHeadEntity>;

const head = (row: HeadRow): ChainHead => ({ tenantId: row.tenant_id, seq: Number(row.seq), hash: row.hash });

/**
 * The old hash chain over `audit_logs` (rows written before the tree) and its heads
 * (`audit_chain_heads`), read through the pool to verify them.
 */
@Injectable()
export class AuditChainRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The heads of every chain, or of one tenant's, by tenant. */
  @GenerateSql({ name: 'heads', params: [] }, { name: 'headsOfTenant', params: [EXAMPLE_TENANT] })
  async heads(tenantId?: string): Promise<ChainHead[]> {
    const rows = await queryRows<HeadRow>(
      this.dataSource,
      `SELECT ${HEAD_COLUMNS} FROM audit_chain_heads${tenantId ? ' WHERE tenant_id = $1' : ''} ORDER BY tenant_id`,
      tenantId ? [tenantId] : [],
    );
    return rows.map(head);
  }

  /** A tenant's sealed rows after position `afterSeq`, in chain order. */
  @GenerateSql({ params: [EXAMPLE_TENANT, 0, 5000] })
  sealedRowsAfter(tenantId: string, afterSeq: number, limit: number): Promise<ChainRow[]> {
    return queryRows<ChainRow>(
      this.dataSource,
      `SELECT ${COLUMNS} FROM audit_logs WHERE tenant_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [tenantId, afterSeq, limit],
    );
  }
}
