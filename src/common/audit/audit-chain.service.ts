import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { createHash } from 'node:crypto';
import { LOCK_KEYS } from '../../database/data-source';
import { ExclusiveJobRunner, Tick } from '../jobs/exclusive';
import type { Change } from '../unit-of-work/change';
import { AuditChainRepository, ChainRow, ChainSeal } from './audit-chain.repository';

const GENESIS = Buffer.alloc(32);
const BATCH = 2000;

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
 * Seals each tenant's audit log rows into a hash chain shortly after they commit (once per tick across
 * instances), and verifies the chains: an altered row breaks its hash, a deleted one leaves a gap in
 * `seq`, a deleted tail no longer matches the chain head.
 */
@Injectable()
export class AuditChainService {
  constructor(
    private readonly chain: AuditChainRepository,
    private readonly jobs: ExclusiveJobRunner,
  ) {}

  @Interval(1_000)
  async sealTick(): Promise<void> {
    await this.seal({ tickMs: 1_000 });
  }

  /** Seals what has committed since the last tick, in the job's change; returns how many rows were sealed. */
  seal(tick?: Tick): Promise<number | undefined> {
    return this.jobs.run(
      'audit-chain',
      LOCK_KEYS.jobAuditChain,
      async (change) => {
        let sealed = 0;
        for (const tenantId of await this.chain.tenantsWithUnsealedRows(change, 1000))
          sealed += await this.sealTenant(change, tenantId);
        return sealed;
      },
      tick,
    );
  }

  private async sealTenant(change: Change, tenantId: string): Promise<number> {
    const head = await this.chain.head(change, tenantId);
    let seq = head?.seq ?? 0;
    let prev = head?.hash ?? GENESIS;
    const rows = await this.chain.unsealedRows(change, tenantId, BATCH);
    if (!rows.length) return 0;
    const seals: ChainSeal[] = rows.map((row) => {
      seq += 1;
      const hash = rowHash(row, seq, prev);
      const placed = { id: row.id, seq, prevHash: prev, hash };
      prev = hash;
      return placed;
    });
    await this.chain.seal(change, tenantId, seals, { seq, hash: prev });
    return rows.length;
  }

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
