import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { createHash } from 'node:crypto';
import { LOCK_KEYS } from '../../database/data-source';
import { ExclusiveJobRunner, Tick } from '../jobs/exclusive';
import { cursorTimeSql } from '../pagination/cursor-pagination';

const GENESIS = Buffer.alloc(32);
const BATCH = 2000;

interface ChainRow {
  id: string;
  tenant_id: string;
  actor_id: string | null;
  actor_type: string;
  entity_type: string;
  entity_id: string | null;
  operation: string;
  message: string;
  created_text: string;
  seq: string | null;
  prev_hash: Buffer | null;
  hash: Buffer | null;
}

export interface ChainProblem {
  tenant_id: string;
  seq: number;
  id: string | null;
  problem: 'altered' | 'deleted' | 'reordered' | 'head_mismatch';
}

export interface ChainReport {
  tenants_checked: number;
  rows_checked: number;
  problems: ChainProblem[];
}

/** The hash of one row: its position, the previous hash and every field, exactly as stored. */
export function rowHash(row: ChainRow, seq: number, prev: Buffer): Buffer {
  const fields = [
    seq,
    row.id,
    row.tenant_id,
    row.actor_id,
    row.actor_type,
    row.entity_type,
    row.entity_id,
    row.operation,
    row.message,
    row.created_text,
  ];
  return createHash('sha256').update(prev).update(JSON.stringify(fields), 'utf8').digest();
}

const COLUMNS = `id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message,
  ${cursorTimeSql('created_at')} AS created_text, seq, prev_hash, hash`;

/**
 * Seals each tenant's audit log rows into a hash chain shortly after they commit (once per tick across
 * instances), and verifies the chains: an altered row breaks its hash, a deleted one leaves a gap in
 * `seq`, a deleted tail no longer matches the chain head.
 */
@Injectable()
export class AuditChainService {
  constructor(
    private readonly db: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly jobs: ExclusiveJobRunner,
  ) {}

  @Interval(1_000)
  async sealTick(): Promise<void> {
    await this.seal({ tickMs: 1_000 });
  }

  /** Seals what has committed since the last tick; returns how many rows were sealed. */
  seal(tick?: Tick): Promise<number | undefined> {
    return this.jobs.run(
      'audit-chain',
      LOCK_KEYS.jobAuditChain,
      async () => {
        const tenants: { tenant_id: string }[] = await this.db.tx.query(
          `SELECT DISTINCT tenant_id FROM audit_logs WHERE seq IS NULL LIMIT 1000`,
        );
        let sealed = 0;
        for (const { tenant_id: tenantId } of tenants) sealed += await this.sealTenant(tenantId);
        return sealed;
      },
      tick,
    );
  }

  private async sealTenant(tenantId: string): Promise<number> {
    const heads: { seq: string; hash: Buffer }[] = await this.db.tx.query(
      'SELECT seq, hash FROM audit_chain_heads WHERE tenant_id = $1',
      [tenantId],
    );
    let seq = heads[0] ? Number(heads[0].seq) : 0;
    let prev = heads[0]?.hash ?? GENESIS;
    const rows: ChainRow[] = await this.db.tx.query(
      `SELECT ${COLUMNS} FROM audit_logs WHERE tenant_id = $1 AND seq IS NULL ORDER BY created_at, id LIMIT ${BATCH}`,
      [tenantId],
    );
    if (!rows.length) return 0;
    const params: unknown[] = [];
    const values = rows.map((row) => {
      seq += 1;
      const hash = rowHash(row, seq, prev);
      params.push(row.id, seq, prev, hash);
      prev = hash;
      const n = params.length;
      return `($${n - 3}::uuid, $${n - 2}::bigint, $${n - 1}::bytea, $${n}::bytea)`;
    });
    await this.db.tx.query(
      `UPDATE audit_logs AS a SET seq = v.seq, prev_hash = v.prev_hash, hash = v.hash
         FROM (VALUES ${values.join(', ')}) AS v(id, seq, prev_hash, hash)
        WHERE a.id = v.id AND a.seq IS NULL`,
      params,
    );
    await this.db.tx.query(
      `INSERT INTO audit_chain_heads (tenant_id, seq, hash) VALUES ($1, $2, $3)
       ON CONFLICT (tenant_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash`,
      [tenantId, seq, prev],
    );
    return rows.length;
  }

  /**
   * Walks every chain (or one tenant's) in `seq` order and recomputes each hash. The first remaining row
   * anchors the chain (retention deletes the oldest rows); after it, every row must follow its
   * predecessor and the last must match the head.
   */
  async verify(tenantId?: string): Promise<ChainReport> {
    const heads: { tenant_id: string; seq: string; hash: Buffer }[] = await this.db.tx.query(
      `SELECT tenant_id, seq, hash FROM audit_chain_heads${tenantId ? ' WHERE tenant_id = $1' : ''} ORDER BY tenant_id`,
      tenantId ? [tenantId] : [],
    );
    const report: ChainReport = { tenants_checked: 0, rows_checked: 0, problems: [] };
    for (const head of heads) {
      report.tenants_checked++;
      let expectedSeq: number | undefined;
      let prev: Buffer | undefined;
      let last = 0;
      let after = 0;
      let problem: ChainProblem | undefined;
      for (;;) {
        const rows: ChainRow[] = await this.db.tx.query(
          `SELECT ${COLUMNS} FROM audit_logs WHERE tenant_id = $1 AND seq > $2 ORDER BY seq LIMIT 5000`,
          [head.tenant_id, after],
        );
        for (const row of rows) {
          report.rows_checked++;
          const seq = Number(row.seq);
          if (expectedSeq !== undefined && seq !== expectedSeq) {
            problem = { tenant_id: head.tenant_id, seq: expectedSeq, id: null, problem: 'deleted' };
            break;
          }
          const anchor = prev ?? row.prev_hash ?? GENESIS;
          if (prev !== undefined && !row.prev_hash?.equals(prev)) {
            problem = { tenant_id: head.tenant_id, seq, id: row.id, problem: 'reordered' };
            break;
          }
          if (!row.hash || !rowHash(row, seq, anchor).equals(row.hash)) {
            problem = { tenant_id: head.tenant_id, seq, id: row.id, problem: 'altered' };
            break;
          }
          prev = row.hash;
          expectedSeq = seq + 1;
          last = seq;
        }
        if (problem || rows.length < 5000) break;
        after = Number(rows[rows.length - 1].seq);
      }
      if (!problem && (last !== Number(head.seq) || (prev && !prev.equals(head.hash))))
        problem = { tenant_id: head.tenant_id, seq: last + 1, id: null, problem: 'head_mismatch' };
      if (problem) report.problems.push(problem);
    }
    return report;
  }
}
