import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { AuditChainRepository, ChainRow } from './audit-chain.repository';

const GENESIS = Buffer.alloc(32);

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
    // Rows written before token types were kept hash as they always did.
    ...(row.token_type !== null && row.token_type !== undefined ? [row.token_type] : []),
  ];
  return createHash('sha256').update(prev).update(JSON.stringify(fields), 'utf8').digest();
}

/**
 * The hash chain the audit log had before its tree: rows written then were sealed into a chain per
 * tenant, and still verify as they did. An altered row breaks its hash, a deleted one leaves a gap in
 * `seq`, a deleted tail no longer matches the chain head. No row joins the chain any more.
 */
@Injectable()
export class AuditChainService {
  constructor(private readonly chain: AuditChainRepository) {}

  /**
   * Walks every chain (or one tenant's) in `seq` order and recomputes each hash. The first remaining row
   * anchors the chain (retention deletes the oldest rows); after it, every row must follow its
   * predecessor and the last must match the head.
   */
  async verify(tenantId?: string): Promise<ChainReport> {
    const heads = await this.chain.heads(tenantId);
    const report: ChainReport = { tenants_checked: 0, rows_checked: 0, problems: [] };
    for (const head of heads) {
      report.tenants_checked++;
      let expectedSeq: number | undefined;
      let prev: Buffer | undefined;
      let last = 0;
      let after = 0;
      let problem: ChainProblem | undefined;
      for (;;) {
        const rows = await this.chain.sealedRowsAfter(head.tenantId, after, 5000);
        for (const row of rows) {
          report.rows_checked++;
          const seq = Number(row.seq);
          if (expectedSeq !== undefined && seq !== expectedSeq) {
            problem = { tenant_id: head.tenantId, seq: expectedSeq, id: null, problem: 'deleted' };
            break;
          }
          const anchor = prev ?? row.prev_hash ?? GENESIS;
          if (prev !== undefined && !row.prev_hash?.equals(prev)) {
            problem = { tenant_id: head.tenantId, seq, id: row.id, problem: 'reordered' };
            break;
          }
          if (!row.hash || !rowHash(row, seq, anchor).equals(row.hash)) {
            problem = { tenant_id: head.tenantId, seq, id: row.id, problem: 'altered' };
            break;
          }
          prev = row.hash;
          expectedSeq = seq + 1;
          last = seq;
        }
        if (problem || rows.length < 5000) break;
        after = Number(rows[rows.length - 1].seq);
      }
      if (!problem && (last !== head.seq || (prev && !prev.equals(head.hash))))
        problem = { tenant_id: head.tenantId, seq: last + 1, id: null, problem: 'head_mismatch' };
      if (problem) report.problems.push(problem);
    }
    return report;
  }
}
