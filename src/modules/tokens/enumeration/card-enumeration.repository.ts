import { Injectable } from '@nestjs/common';
import { GenerateSql } from '../../../database/generate-sql';
import { type ColumnOf, type RowOf, queryRows, affectedRows } from '../../../database/table';
import { CardEnumerationCountEntity } from '../entities/card-enumeration-count.entity';
import type { TokenEntity } from '../entities/token.entity';
import type { CountedNumber, CountedRow, CountedSoFar } from './card-enumeration';
import type { Principal } from '../../../common/auth/principal';
import { accessPredicate } from '../search/token-search.repository';
import type { Change, Queryable } from '../../../common/unit-of-work/change';
import type { CardEnumerationGroupEntity } from '../entities/card-enumeration-group.entity';

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

/** The columns of a group's row, in the order of the SELECTs that write it. */
const GROUP_COLUMNS = [
  'tenant_id',
  'group_digest',
  'version',
  'counted_at',
] as const satisfies ColumnOf<CardEnumerationGroupEntity>[];

/** A group's version as a read saw it (a group without a row has none). */
export interface GroupVersion {
  group: Buffer;
  version: string;
}

const EXAMPLE_TENANT = '00000000-0000-4000-8000-000000000001';
const EXAMPLE_COUNTER = '00000000-0000-4000-8000-000000000003';
const EXAMPLE_GROUP = Buffer.alloc(32, 1);
const EXAMPLE_NUMBER = Buffer.alloc(32, 2);
const EXAMPLE_NOW = new Date('2026-01-01T00:00:00Z');

/**
 * `card_enumeration_counts` and `card_enumeration_groups`: written in the change the caller gives, read
 * in it, through the pool before a one-statement tokenize of one number, or by the one statement of a
 * tokenize of several (`countInWrite`).
 */
@Injectable()
export class CardEnumerationRepository {
  /**
   * Locks the groups' rows until the transaction ends, in one order (two requests never deadlock), and
   * gives each a new version: the requests that count numbers of one group under the lock are
   * serialized, and a one-statement tokenize that read the count before (`insertIfUnchanged`), or whose
   * snapshot was taken before (`countInWrite`), finds its version gone.
   * Sent by itself, before the reads: a statement that locked and read at once would read a snapshot
   * taken before it held the locks.
   */
  @GenerateSql({ change: true, params: [EXAMPLE_TENANT, [EXAMPLE_GROUP], EXAMPLE_NOW] })
  async lockGroups(change: Change, tenantId: string, groups: Buffer[], now: Date): Promise<void> {
    if (!groups.length) return;
    await change.query(
      `INSERT INTO card_enumeration_groups (${GROUP_COLUMNS.join(', ')})
       SELECT $1::uuid, g, nextval('card_enumeration_versions'), $3::timestamptz
         FROM (SELECT DISTINCT g FROM unnest($2::bytea[]) AS g) AS wanted ORDER BY g
       ON CONFLICT (tenant_id, group_digest)
       DO UPDATE SET version = EXCLUDED.version, counted_at = EXCLUDED.counted_at`,
      [tenantId, groups, now],
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
   * What a tokenize weighs, in one statement (one snapshot):
   * - `counted`: as `findCounted`;
   * - `stored`: live tokens holding these fingerprints, as access rules see them, whose fingerprint was
   *   counted (one made by an uncounted caller and never read would spare the number it holds): at most
   *   20 per fingerprint (a vault may hold a test card a million times; one the caller may read is enough,
   *   and missing one only counts a number it could have been spared);
   * - `versions`: each group's version as that snapshot saw it (absent: never counted in, or pruned),
   *   for `insertIfUnchanged`.
   * Through the pool (`UnitOfWork.reader`) before a one-statement tokenize, or in a change after
   * `lockGroups`.
   */
  @GenerateSql({
    change: true,
    params: [EXAMPLE_TENANT, [EXAMPLE_GROUP], EXAMPLE_NOW, EXAMPLE_COUNTER, ['fp1'], EXAMPLE_NOW],
  })
  async findCountedAndStored(
    db: Queryable,
    tenantId: string,
    groups: Buffer[],
    since: Date,
    countedBy: string,
    fingerprints: string[],
    now: Date,
  ): Promise<{ counted: CountedSoFar[]; stored: StoredToken[]; versions: GroupVersion[] }> {
    type Row = { part: 'counted' | 'stored' | 'version' } & {
      [K in keyof CountRow | keyof StoredToken | 'mine' | 'version']: unknown;
    };
    const rows = await queryRows<Row>(
      db,
      `SELECT 'counted' AS part, c.group_digest, c.number_digest, bool_or(c.counted_by = $4) AS mine,
              NULL::varchar AS id, NULL::varchar AS type, NULL::text[] AS containers, NULL::varchar AS fingerprint,
              NULL::bigint AS version
         FROM (SELECT DISTINCT g FROM unnest($2::bytea[]) AS g) AS wanted,
         LATERAL (SELECT group_digest, number_digest, counted_by FROM card_enumeration_counts
                   WHERE tenant_id = $1 AND group_digest = wanted.g AND created_at > $3
                  OFFSET 0) AS c
        GROUP BY c.group_digest, c.number_digest
       UNION ALL
       SELECT 'stored', NULL, NULL, NULL, t.id, t.type, t.containers, f.fingerprint, NULL
         FROM unnest($5::text[]) AS f(fingerprint),
         LATERAL (SELECT id, type, containers FROM tokens
                   WHERE tenant_id = $1 AND fingerprint = f.fingerprint AND fingerprint_groups IS NULL
                     AND (expires_at IS NULL OR expires_at > $6)
                   LIMIT 20) AS t
       UNION ALL
       SELECT 'version', g.group_digest, NULL, NULL, NULL, NULL, NULL, NULL, g.version
         FROM card_enumeration_groups AS g
        WHERE g.tenant_id = $1 AND g.group_digest = ANY($2::bytea[])`,
      [tenantId, groups, since, countedBy, fingerprints, now],
    );
    const counted: CountedSoFar[] = [];
    const stored: StoredToken[] = [];
    const versions: GroupVersion[] = [];
    for (const row of rows) {
      if (row.part === 'counted')
        counted.push({
          group: row.group_digest as Buffer,
          number: row.number_digest as Buffer,
          mine: row.mine === true,
        });
      else if (row.part === 'stored')
        stored.push({
          id: row.id as string,
          type: row.type as StoredToken['type'],
          containers: row.containers as string[],
          fingerprint: row.fingerprint as string,
        });
      else versions.push({ group: row.group_digest as Buffer, version: String(row.version) });
    }
    return { counted, stored, versions };
  }

  /**
   * Records numbers as counted at `now`, only where no request counted in their groups since `read`
   * (the versions `findCountedAndStored` answered): a write of a one-statement change, sent with its
   * others (the tokens it counts them for). Each group's row is written first, in one order: to a new
   * version where it still holds the one read (or made, where there was none), and the counts only once
   * every group's was. Otherwise the whole statement is refused with `conflict()`: another request counted
   * in one of the groups meanwhile, and its count was not weighed. A row lock taken as it writes
   * serializes two such statements over one group; the second then sees the first's version.
   */
  @GenerateSql({
    change: true,
    params: [
      EXAMPLE_TENANT,
      [{ group: EXAMPLE_GROUP, version: null }],
      [{ group: EXAMPLE_GROUP, number: EXAMPLE_NUMBER, countedBy: EXAMPLE_COUNTER }],
      EXAMPLE_NOW,
      () => new Error('conflict'),
    ],
  })
  async insertIfUnchanged(
    change: Change,
    tenantId: string,
    read: { group: Buffer; version: string | null }[],
    rows: CountedRow[],
    now: Date,
    conflict: () => Error,
  ): Promise<void> {
    if (!rows.length) return;
    await change.write(
      ({ p, name, refuse }) => {
        const tenant = p.add(tenantId);
        const at = p.add(now);
        const groups = name('groups');
        const counted = name('counted');
        // Each group with the version read, null where it had no row.
        const readGroups = p.add(read.map((r) => r.group));
        const readVersions = p.add(read.map((r) => r.version));
        const expected = p.add(read.length);
        return {
          ctes: [
            `${groups} AS (INSERT INTO card_enumeration_groups (${GROUP_COLUMNS.join(', ')})
       SELECT ${tenant}::uuid, r.g, nextval('card_enumeration_versions'), ${at}::timestamptz
         FROM unnest(${readGroups}::bytea[], ${readVersions}::bigint[]) AS r(g, v)
        ORDER BY r.g
       ON CONFLICT (tenant_id, group_digest) DO UPDATE SET version = EXCLUDED.version, counted_at = EXCLUDED.counted_at
        WHERE card_enumeration_groups.version IS NOT DISTINCT FROM
              (SELECT v FROM unnest(${readGroups}::bytea[], ${readVersions}::bigint[]) AS x(g, v)
                WHERE x.g = EXCLUDED.group_digest)
       RETURNING 1)`,
            `${counted} AS (INSERT INTO card_enumeration_counts (${INSERTED.join(', ')})
       SELECT ${tenant}::uuid, g, n, c, ${at}::timestamptz
         FROM unnest(${p.add(rows.map((r) => r.group))}::bytea[], ${p.add(rows.map((r) => r.number))}::bytea[],
                     ${p.add(rows.map((r) => r.countedBy))}::uuid[]) AS r(g, n, c)
        WHERE (SELECT count(*) FROM ${groups}) = ${expected}
       ON CONFLICT (tenant_id, group_digest, number_digest, counted_by) DO UPDATE SET created_at = EXCLUDED.created_at)`,
          ],
          result: refuse(`(SELECT count(*) FROM ${groups}) <> ${expected}`),
        };
      },
      { refused: conflict },
    );
  }

  /**
   * The guard decided in the write of a one-statement change (its tokens written by the same
   * statement), in one round trip. In the statement's own snapshot: the numbers of these groups counted
   * in the window since `since`, the `wanted` numbers that count (neither counted by `countedBy` in the
   * window nor held by a live token whose fingerprint was counted and that `who` may read, by the access
   * rules' SQL form), and whether any group would then pass `limit`: if so the statement refuses itself
   * with `refused()`, writing nothing. Otherwise each group of a number that counts moves to a new
   * version where it still holds the one that snapshot saw (none where it had no row), and the counts
   * are written once every group's row was: a group that moved means another request counted in it
   * after the snapshot, unweighed, and the statement refuses itself with `conflict()` (tried again). The
   * row lock the upsert takes serializes two writers over one group, across instances and behind a
   * transaction pooler (no session state): the second sees the first's version, not its own snapshot's.
   * It reads tables that grow, so the statement is planned afresh each time (`reads`), not kept prepared.
   */
  @GenerateSql({
    change: true,
    params: [
      { tenantId: EXAMPLE_TENANT, permissions: ['token:read'], rules: [] },
      EXAMPLE_COUNTER,
      [{ group: EXAMPLE_GROUP, number: EXAMPLE_NUMBER, fingerprint: 'fp1' }],
      { since: EXAMPLE_NOW, now: EXAMPLE_NOW, limit: 10 },
      { refused: () => new Error('refused'), conflict: () => new Error('conflict') },
    ],
  })
  async countInWrite(
    change: Change,
    who: Pick<Principal, 'tenantId' | 'permissions' | 'rules' | 'authorizer'>,
    countedBy: string,
    wanted: CountedNumber[],
    at: { since: Date; now: Date; limit: number },
    errors: { refused: () => Error; conflict: () => Error },
  ): Promise<void> {
    if (!wanted.length) return;
    await change.write(
      ({ p, name, refuse }) => {
        const tenant = p.add(who.tenantId);
        const now = p.add(at.now);
        const by = p.add(countedBy);
        const [candidates, counted, stored, fresh, over, seen, groups, rows] = [
          'candidates',
          'counted',
          'stored',
          'fresh',
          'over',
          'seen',
          'groups',
          'rows',
        ].map(name);
        const readable = accessPredicate(who, 'token:read', p);
        const moved = `(SELECT count(*) FROM ${groups}) <> (SELECT count(DISTINCT g) FROM ${fresh})`;
        return {
          ctes: [
            `${candidates} AS (SELECT g, n, f FROM unnest(${p.add(wanted.map((w) => w.group))}::bytea[],
                   ${p.add(wanted.map((w) => w.number))}::bytea[], ${p.add(wanted.map((w) => w.fingerprint))}::text[]) AS w(g, n, f))`,
            // As findCounted: one primary key range per group.
            `${counted} AS (SELECT c.group_digest AS g, c.number_digest AS n, bool_or(c.counted_by = ${by}::uuid) AS mine
         FROM (SELECT DISTINCT g FROM ${candidates}) AS wanted,
         LATERAL (SELECT group_digest, number_digest, counted_by FROM card_enumeration_counts
                   WHERE tenant_id = ${tenant}::uuid AND group_digest = wanted.g AND created_at > ${p.add(at.since)}::timestamptz
                  OFFSET 0) AS c
        GROUP BY c.group_digest, c.number_digest)`,
            // As findCountedAndStored: at most 20 stored tokens per fingerprint weighed, by a lateral join (as
            // a NOT EXISTS, planned for its first row, it scanned the tenant's tokens by creation time).
            `${stored} AS (SELECT DISTINCT w.f FROM ${candidates} AS w,
         LATERAL (SELECT id, type, containers FROM tokens
                   WHERE tenant_id = ${tenant}::uuid AND fingerprint = w.f AND fingerprint_groups IS NULL
                     AND (expires_at IS NULL OR expires_at > ${now}::timestamptz)
                   LIMIT 20) AS t
        WHERE ${readable})`,
            `${fresh} AS (SELECT w.g, w.n FROM ${candidates} AS w
        WHERE NOT EXISTS (SELECT 1 FROM ${counted} AS c WHERE c.g = w.g AND c.n = w.n AND c.mine)
          AND w.f NOT IN (SELECT f FROM ${stored}))`,
            `${over} AS (SELECT EXISTS (SELECT 1 FROM (SELECT g, count(*) AS adding FROM ${fresh} GROUP BY g) AS a
                     WHERE (SELECT count(*) FROM ${counted} AS c WHERE c.g = a.g) + a.adding > ${p.add(at.limit)}::int) AS over)`,
            // The groups' rows by primary key, from a parameter (a join with `fresh` was planned as a scan of
            // every group of the tenant once the table had grown: a 100-card tokenize slowed by a third in 60 s).
            `${seen} AS (SELECT group_digest, version FROM card_enumeration_groups
        WHERE tenant_id = ${tenant}::uuid AND group_digest = ANY(${p.add([...new Map(wanted.map((w) => [w.group.toString('hex'), w.group])).values()])}::bytea[]))`,
            `${groups} AS (INSERT INTO card_enumeration_groups (${GROUP_COLUMNS.join(', ')})
       SELECT ${tenant}::uuid, d.g, nextval('card_enumeration_versions'), ${now}::timestamptz
         FROM (SELECT DISTINCT g FROM ${fresh}) AS d
        WHERE NOT (SELECT over FROM ${over})
        ORDER BY d.g
       ON CONFLICT (tenant_id, group_digest) DO UPDATE SET version = EXCLUDED.version, counted_at = EXCLUDED.counted_at
        WHERE card_enumeration_groups.version IS NOT DISTINCT FROM
              (SELECT s.version FROM ${seen} AS s WHERE s.group_digest = EXCLUDED.group_digest)
       RETURNING 1)`,
            `${rows} AS (INSERT INTO card_enumeration_counts (${INSERTED.join(', ')})
       SELECT ${tenant}::uuid, g, n, ${by}::uuid, ${now}::timestamptz FROM ${fresh}
        WHERE NOT (SELECT over FROM ${over}) AND NOT (${moved})
       ON CONFLICT (tenant_id, group_digest, number_digest, counted_by) DO UPDATE SET created_at = EXCLUDED.created_at)`,
          ],
          // Past the limit first: a snapshot that saw too many already is refused whatever moved since.
          result: `COALESCE(${refuse(`(SELECT over FROM ${over})`, errors.refused)}, ${refuse(moved, errors.conflict)})`,
        };
      },
      { reads: true },
    );
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
    // A group's row goes with its last count: a later request makes it again, under a version never
    // taken before (the sequence), so no request that read it can mistake the new row for the old.
    await affectedRows(change, `DELETE FROM card_enumeration_groups WHERE counted_at <= $1`, [before]);
    return count;
  }
}
