import { Injectable } from '@nestjs/common';
import type { Change } from '../../../common/unit-of-work/change';
import { LOCK_KEYS } from '../../../database/data-source';
import { GenerateSql } from '../../../database/generate-sql';
import { affectedRows, columnsOf, queryRows } from '../../../database/table';
import { DataKeyRotationEntity } from '../entities/data-key-rotation.entity';

const EXAMPLE_RUN = '00000000-0000-4000-8000-000000000009';
const EXAMPLE_TENANT = '00000000-0000-4000-8000-000000000001';
const EXAMPLE_NOW = new Date('2026-01-01T00:00:00Z');

/** Where a pass over the tokens has got to, in primary key order; `FIRST` is before every token. */
export interface TokenCursor {
  tenantId: string;
  id: string;
}
export const FIRST: TokenCursor = { tenantId: '00000000-0000-0000-0000-000000000000', id: '' };

/** A token (or a CVC, `id` being its token's) sealed under an older generation than its tenant's last. */
export interface StaleSealed {
  tenant_id: string;
  id: string;
  sealed: Buffer;
  data_key: number;
  /** The tenant's last generation, which it is to be sealed under. */
  target: number;
}

/** The last generation of the row's tenant's data key (0 when it has none made). */
const lastGeneration = (alias: string) =>
  `(SELECT COALESCE(max(d.generation), 0) FROM tenant_data_keys d WHERE d.tenant_id = ${alias}.tenant_id)`;

/**
 * The SQL of `vault keys rotate --tenant-keys`: its runs, the tokens and CVCs sealed under a generation
 * older than their tenant's last (read in primary key order, locked, skipping rows another change holds,
 * so that writes go on), written back under it, and generations no row uses any more destroyed.
 */
@Injectable()
export class DataKeyRotationRepository {
  /** One rotation at a time: the second waits for the first's change to end. */
  @GenerateSql({ change: true, params: [] })
  async lock(change: Change): Promise<void> {
    await change.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEYS.dataKeyRotation]);
  }

  /** The run not finished, if any (at most one). */
  @GenerateSql({ change: true, params: [] })
  async running(change: Change): Promise<string | undefined> {
    const [row] = await queryRows<{ id: string }>(
      change,
      'SELECT id FROM data_key_rotations WHERE finished_at IS NULL',
    );
    return row?.id;
  }

  @GenerateSql({ change: true, params: [EXAMPLE_RUN, EXAMPLE_NOW] })
  async start(change: Change, id: string, at: Date): Promise<void> {
    await change.query(
      `INSERT INTO data_key_rotations (${columnsOf(DataKeyRotationEntity, undefined, { only: ['id', 'started_at'] })}) VALUES ($1, $2)`,
      [id, at],
    );
  }

  @GenerateSql({ change: true, params: [EXAMPLE_RUN, EXAMPLE_NOW] })
  async finish(change: Change, id: string, at: Date): Promise<void> {
    await change.query('UPDATE data_key_rotations SET finished_at = $2 WHERE id = $1', [id, at]);
  }

  /**
   * Destroys the generations older than their tenant's last that no token and no CVC is sealed under
   * (the previous run's, at the start of the next one: by then no instance can still seal under them).
   */
  @GenerateSql({ change: true, params: [] })
  async retireUnused(change: Change): Promise<number> {
    return affectedRows(
      change,
      `DELETE FROM tenant_data_keys k
        WHERE k.generation < ${lastGeneration('k')}
          AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.tenant_id = k.tenant_id AND t.data_key = k.generation)
          AND NOT EXISTS (SELECT 1 FROM token_cvcs c WHERE c.tenant_id = k.tenant_id AND c.data_key = k.generation)`,
    );
  }

  /** The next `limit` stale tokens after `after`, locked until the change ends (those held elsewhere skipped). */
  @GenerateSql({ change: true, params: [{ tenantId: EXAMPLE_TENANT, id: 'tok' }, 500] })
  async lockStaleTokens(change: Change, after: TokenCursor, limit: number): Promise<StaleSealed[]> {
    return queryRows<StaleSealed>(
      change,
      `SELECT t.tenant_id, t.id, t.data AS sealed, t.data_key, ${lastGeneration('t')} AS target FROM tokens t
        WHERE (t.tenant_id, t.id) > ($1::uuid, $2::varchar) AND t.data_key < ${lastGeneration('t')}
        ORDER BY t.tenant_id, t.id LIMIT $3 FOR UPDATE OF t SKIP LOCKED`,
      [after.tenantId, after.id, limit],
    );
  }

  /** Up to `limit` stale CVCs (kept an hour at most: few), locked until the change ends. */
  @GenerateSql({ change: true, params: [500] })
  async lockStaleCvcs(change: Change, limit: number): Promise<StaleSealed[]> {
    return queryRows<StaleSealed>(
      change,
      `SELECT c.tenant_id, c.token_id AS id, c.cvc AS sealed, c.data_key, ${lastGeneration('c')} AS target
         FROM token_cvcs c
        WHERE c.data_key < ${lastGeneration('c')} LIMIT $1 FOR UPDATE OF c SKIP LOCKED`,
      [limit],
    );
  }

  /** Writes back tokens sealed again: each only if still under the generation it was read under. */
  @GenerateSql({
    change: true,
    params: [
      [{ tenant_id: EXAMPLE_TENANT, id: 'tok', sealed: Buffer.from('x'), data_key: 2, was: 1 }],
      'tokens',
    ],
  })
  async replace(
    change: Change,
    rows: (Omit<StaleSealed, 'target'> & { was: number })[],
    table: 'tokens' | 'token_cvcs',
  ): Promise<void> {
    if (!rows.length) return;
    const [column, id] = table === 'tokens' ? ['data', 'id'] : ['cvc', 'token_id'];
    await change.query(
      `UPDATE ${table} x SET ${column} = decode(v.sealed, 'base64'), data_key = v.data_key
         FROM unnest($1::uuid[], $2::varchar[], $3::text[], $4::int[], $5::int[]) AS v(tenant_id, id, sealed, data_key, was)
        WHERE x.tenant_id = v.tenant_id AND x.${id} = v.id AND x.data_key = v.was`,
      [
        rows.map((r) => r.tenant_id),
        rows.map((r) => r.id),
        rows.map((r) => r.sealed.toString('base64')),
        rows.map((r) => r.data_key),
        rows.map((r) => r.was),
      ],
    );
  }

  /** Tokens (and CVCs) sealed under an older generation than their tenant's last, and all tokens. */
  @GenerateSql({ change: true, params: [] })
  async progress(change: Change): Promise<{ stale: number; cvcs: number; tokens: number }> {
    const [row] = await queryRows<{ stale: number; cvcs: number; tokens: number }>(
      change,
      `SELECT (SELECT count(*) FROM tokens t WHERE t.data_key < ${lastGeneration('t')})::int AS stale,
              (SELECT count(*) FROM token_cvcs c WHERE c.data_key < ${lastGeneration('c')})::int AS cvcs,
              (SELECT count(*) FROM tokens)::int AS tokens`,
    );
    return row;
  }
}
