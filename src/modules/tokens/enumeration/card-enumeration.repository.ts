import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { LOCK_KEYS } from '../../../database/data-source';
import { GenerateSql } from '../../../database/generate-sql';
import { type ColumnOf, type RowOf, queryRows, affectedRows } from '../../../database/table';
import { CardEnumerationCountEntity } from '../entities/card-enumeration-count.entity';
import type { TokenEntity } from '../entities/token.entity';
import type { CountedRow, CountedSoFar } from './card-enumeration';
import type { Change } from '../../../common/unit-of-work/change';

/** The lock key of one (tenant, group): the first 31 bits of SHA-256. */
const groupKey = (tenantId: string, group: Buffer): number =>
  createHash('sha256').update(tenantId).update(group).digest().readInt32BE(0);

type CountRow = RowOf<CardEnumerationCountEntity>;

/** A stored token as the guard weighs it. */
type StoredToken = Pick<RowOf<TokenEntity>, 'id' | 'type' | 'containers' | 'fingerprint'>;

/** The columns `insert` writes, in the order of its SELECT. */
const INSERTED = [
  'tenant_id',
  'group_digest',
  'number_digest',
  'counted_by',
  'created_at',
] as const satisfies ColumnOf<CardEnumerationCountEntity>[];

const EXAMPLE_TENANT = '00000000-0000-4000-8000-000000000001';
const EXAMPLE_COUNTER = '00000000-0000-4000-8000-000000000003';
const EXAMPLE_GROUP = Buffer.alloc(32, 1);
const EXAMPLE_NUMBER = Buffer.alloc(32, 2);
const EXAMPLE_NOW = new Date('2026-01-01T00:00:00Z');

/**
 * `card_enumeration_counts`, always in the change the caller gives (which holds the groups' locks until
 * it ends).
 */
@Injectable()
export class CardEnumerationRepository {
  /**
   * Locks the groups until the transaction ends (in one order, so two requests never deadlock): the
   * requests that count numbers of one group are serialized, and none reads the count another is about
   * to change.
   */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, [EXAMPLE_GROUP]] })
  async lockGroups(change: Change, tenantId: string, groups: Buffer[]): Promise<void> {
    const keys = [...new Set(groups.map((group) => groupKey(tenantId, group)))];
    if (!keys.length) return;
    await change.query(
      `SELECT count(pg_advisory_xact_lock(${LOCK_KEYS.cardEnumeration}, k))
         FROM (SELECT k FROM unnest($1::int[]) AS k ORDER BY k) AS ordered`,
      [keys],
    );
  }

  /** The numbers of these groups counted after `since`, each once, and whether `countedBy` counted it. */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, [EXAMPLE_GROUP], EXAMPLE_NOW, EXAMPLE_COUNTER] })
  async findCounted(
    change: Change,
    tenantId: string,
    groups: Buffer[],
    since: Date,
    countedBy: string,
  ): Promise<CountedSoFar[]> {
    const rows = await queryRows<Pick<CountRow, 'group_digest' | 'number_digest'> & { mine: boolean }>(
      change,
      // One primary key range per group, whatever the planner knows of the table: on a fresh deployment,
      // with no statistics yet, a plain `group_digest = ANY(...)` (or this lateral join, flattened) was
      // planned as a scan of every row of the tenant, slower with each card counted. `OFFSET 0` keeps the
      // subquery a lookup per group.
      `SELECT c.group_digest, c.number_digest, bool_or(c.counted_by = $4) AS mine
         FROM (SELECT DISTINCT g FROM unnest($2::bytea[]) AS g) AS wanted,
         LATERAL (SELECT group_digest, number_digest, counted_by FROM card_enumeration_counts
                   WHERE tenant_id = $1 AND group_digest = wanted.g AND created_at > $3
                  OFFSET 0) AS c
        GROUP BY c.group_digest, c.number_digest`,
      [tenantId, groups, since, countedBy],
    );
    return rows.map((row) => ({ group: row.group_digest, number: row.number_digest, mine: row.mine }));
  }

  /**
   * What a tokenize weighs, in one statement (one round trip, under the groups' locks taken by the
   * statement before: a statement that took them itself would read a snapshot taken before it held them):
   * - `counted`: as `findCounted`;
   * - `stored`: live tokens holding these fingerprints, as access rules see them, whose fingerprint was
   *   counted (one made by an uncounted caller and never read would spare the number it holds): at most
   *   20 per fingerprint (a vault may hold a test card a million times; one the caller may read is enough,
   *   and missing one only counts a number it could have been spared).
   */
  @GenerateSql({
    change: true,
    params: [EXAMPLE_TENANT, [EXAMPLE_GROUP], EXAMPLE_NOW, EXAMPLE_COUNTER, ['fp1'], EXAMPLE_NOW],
  })
  async findCountedAndStored(
    change: Change,
    tenantId: string,
    groups: Buffer[],
    since: Date,
    countedBy: string,
    fingerprints: string[],
    now: Date,
  ): Promise<{ counted: CountedSoFar[]; stored: StoredToken[] }> {
    type Row = Pick<CountRow, 'group_digest' | 'number_digest'> & { mine: boolean | null } & {
      [K in keyof StoredToken]: StoredToken[K] | null;
    };
    const rows = await queryRows<Row>(
      change,
      `SELECT c.group_digest, c.number_digest, bool_or(c.counted_by = $4) AS mine,
              NULL::varchar AS id, NULL::varchar AS type, NULL::text[] AS containers, NULL::varchar AS fingerprint
         FROM (SELECT DISTINCT g FROM unnest($2::bytea[]) AS g) AS wanted,
         LATERAL (SELECT group_digest, number_digest, counted_by FROM card_enumeration_counts
                   WHERE tenant_id = $1 AND group_digest = wanted.g AND created_at > $3
                  OFFSET 0) AS c
        GROUP BY c.group_digest, c.number_digest
       UNION ALL
       SELECT NULL, NULL, NULL, t.id, t.type, t.containers, f.fingerprint
         FROM unnest($5::text[]) AS f(fingerprint),
         LATERAL (SELECT id, type, containers FROM tokens
                   WHERE tenant_id = $1 AND fingerprint = f.fingerprint AND fingerprint_groups IS NULL
                     AND (expires_at IS NULL OR expires_at > $6)
                   LIMIT 20) AS t`,
      [tenantId, groups, since, countedBy, fingerprints, now],
    );
    const counted: CountedSoFar[] = [];
    const stored: StoredToken[] = [];
    for (const row of rows) {
      if (row.id === null)
        counted.push({ group: row.group_digest, number: row.number_digest, mine: row.mine === true });
      else
        stored.push({
          id: row.id,
          type: row.type!,
          containers: row.containers!,
          fingerprint: row.fingerprint!,
        });
    }
    return { counted, stored };
  }

  /**
   * Records numbers as counted at `now` (a row counted earlier, past the window, starts again): a write
   * of the change, sent with its others (the tokens it counts them for), under the groups' locks.
   */
  @GenerateSql({
    change: true,
    params: [
      EXAMPLE_TENANT,
      [{ group: EXAMPLE_GROUP, number: EXAMPLE_NUMBER, countedBy: EXAMPLE_COUNTER }],
      EXAMPLE_NOW,
    ],
  })
  async insert(change: Change, tenantId: string, rows: CountedRow[], now: Date): Promise<void> {
    if (!rows.length) return;
    await change.write(({ p, name }) => ({
      ctes: [
        `${name('counted')} AS (INSERT INTO card_enumeration_counts (${INSERTED.join(', ')})
       SELECT ${p.add(tenantId)}::uuid, g, n, c, ${p.add(now)}::timestamptz
         FROM unnest(${p.add(rows.map((r) => r.group))}::bytea[], ${p.add(rows.map((r) => r.number))}::bytea[],
                     ${p.add(rows.map((r) => r.countedBy))}::uuid[]) AS r(g, n, c)
       ON CONFLICT (tenant_id, group_digest, number_digest, counted_by) DO UPDATE SET created_at = EXCLUDED.created_at)`,
      ],
    }));
  }

  /** Marks these tokens' fingerprints counted: reads show them from now on without counting again. */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, ['00000000-0000-4000-8000-000000000002']] })
  async markCounted(change: Change, tenantId: string, ids: string[]): Promise<void> {
    if (!ids.length) return;
    await change.query(
      `UPDATE tokens SET fingerprint_groups = NULL WHERE tenant_id = $1 AND id = ANY($2::varchar[])`,
      [tenantId, ids],
    );
  }

  /** Deletes, in every tenant, what was counted at or before `before`; returns how many rows. */
  @GenerateSql({ change: true, params: [EXAMPLE_NOW] })
  async deleteCountedBefore(change: Change, before: Date): Promise<number> {
    const count = await affectedRows(change, `DELETE FROM card_enumeration_counts WHERE created_at <= $1`, [
      before,
    ]);
    return count;
  }
}
