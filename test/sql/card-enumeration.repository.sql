-- CardEnumerationRepository.lockGroups
INSERT INTO card_enumeration_groups (tenant_id, group_digest, version, counted_at)
  SELECT $1::uuid, g, nextval('card_enumeration_versions'), $3::timestamptz
    FROM (SELECT DISTINCT g FROM unnest($2::bytea[]) AS g) AS wanted ORDER BY g
  ON CONFLICT (tenant_id, group_digest)
  DO UPDATE SET version = EXCLUDED.version, counted_at = EXCLUDED.counted_at;

-- CardEnumerationRepository.findCounted
SELECT c.group_digest, c.number_digest, bool_or(c.counted_by = $4) AS mine
   FROM (SELECT DISTINCT g FROM unnest($2::bytea[]) AS g) AS wanted,
   LATERAL (SELECT group_digest, number_digest, counted_by FROM card_enumeration_counts
             WHERE tenant_id = $1 AND group_digest = wanted.g AND created_at > $3
            OFFSET 0) AS c
  GROUP BY c.group_digest, c.number_digest;

-- CardEnumerationRepository.findCountedAndStored
SELECT 'counted' AS part, c.group_digest, c.number_digest, bool_or(c.counted_by = $4) AS mine,
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
   WHERE g.tenant_id = $1 AND g.group_digest = ANY($2::bytea[]);

-- CardEnumerationRepository.insertIfUnchanged
WITH groups_0 AS (INSERT INTO card_enumeration_groups (tenant_id, group_digest, version, counted_at)
         SELECT $1::uuid, r.g, nextval('card_enumeration_versions'), $2::timestamptz
           FROM unnest($3::bytea[], $4::bigint[]) AS r(g, v)
          ORDER BY r.g
         ON CONFLICT (tenant_id, group_digest) DO UPDATE SET version = EXCLUDED.version, counted_at = EXCLUDED.counted_at
          WHERE card_enumeration_groups.version IS NOT DISTINCT FROM
                (SELECT v FROM unnest($3::bytea[], $4::bigint[]) AS x(g, v)
                  WHERE x.g = EXCLUDED.group_digest)
         RETURNING 1),
  counted_0 AS (INSERT INTO card_enumeration_counts (tenant_id, group_digest, number_digest, counted_by, created_at)
         SELECT $1::uuid, g, n, c, $2::timestamptz
           FROM unnest($6::bytea[], $7::bytea[],
                       $8::uuid[]) AS r(g, n, c)
          WHERE (SELECT count(*) FROM groups_0) = $5
         ON CONFLICT (tenant_id, group_digest, number_digest, counted_by) DO UPDATE SET created_at = EXCLUDED.created_at)
  SELECT (CASE WHEN (SELECT count(*) FROM groups_0) <> $5 THEN refuse_write($9::text) END) AS r0;

-- CardEnumerationRepository.countInWrite
WITH candidates_0 AS (SELECT g, n, f FROM unnest($4::bytea[],
                     $5::bytea[], $6::text[]) AS w(g, n, f)),
  counted_0 AS (SELECT c.group_digest AS g, c.number_digest AS n, bool_or(c.counted_by = $3::uuid) AS mine
           FROM (SELECT DISTINCT g FROM candidates_0) AS wanted,
           LATERAL (SELECT group_digest, number_digest, counted_by FROM card_enumeration_counts
                     WHERE tenant_id = $1::uuid AND group_digest = wanted.g AND created_at > $7::timestamptz
                    OFFSET 0) AS c
          GROUP BY c.group_digest, c.number_digest),
  stored_0 AS (SELECT DISTINCT w.f FROM candidates_0 AS w,
           LATERAL (SELECT id, type, containers FROM tokens
                     WHERE tenant_id = $1::uuid AND fingerprint = w.f AND fingerprint_groups IS NULL
                       AND (expires_at IS NULL OR expires_at > $2::timestamptz)
                     LIMIT 20) AS t
          WHERE TRUE),
  fresh_0 AS (SELECT w.g, w.n FROM candidates_0 AS w
          WHERE NOT EXISTS (SELECT 1 FROM counted_0 AS c WHERE c.g = w.g AND c.n = w.n AND c.mine)
            AND w.f NOT IN (SELECT f FROM stored_0)),
  over_0 AS (SELECT EXISTS (SELECT 1 FROM (SELECT g, count(*) AS adding FROM fresh_0 GROUP BY g) AS a
                       WHERE (SELECT count(*) FROM counted_0 AS c WHERE c.g = a.g) + a.adding > $8::int) AS over),
  seen_0 AS (SELECT group_digest, version FROM card_enumeration_groups
          WHERE tenant_id = $1::uuid AND group_digest = ANY($9::bytea[])),
  groups_0 AS (INSERT INTO card_enumeration_groups (tenant_id, group_digest, version, counted_at)
         SELECT $1::uuid, d.g, nextval('card_enumeration_versions'), $2::timestamptz
           FROM (SELECT DISTINCT g FROM fresh_0) AS d
          WHERE NOT (SELECT over FROM over_0)
          ORDER BY d.g
         ON CONFLICT (tenant_id, group_digest) DO UPDATE SET version = EXCLUDED.version, counted_at = EXCLUDED.counted_at
          WHERE card_enumeration_groups.version IS NOT DISTINCT FROM
                (SELECT s.version FROM seen_0 AS s WHERE s.group_digest = EXCLUDED.group_digest)
         RETURNING 1),
  rows_0 AS (INSERT INTO card_enumeration_counts (tenant_id, group_digest, number_digest, counted_by, created_at)
         SELECT $1::uuid, g, n, $3::uuid, $2::timestamptz FROM fresh_0
          WHERE NOT (SELECT over FROM over_0) AND NOT ((SELECT count(*) FROM groups_0) <> (SELECT count(DISTINCT g) FROM fresh_0))
         ON CONFLICT (tenant_id, group_digest, number_digest, counted_by) DO UPDATE SET created_at = EXCLUDED.created_at)
  SELECT COALESCE((CASE WHEN (SELECT over FROM over_0) THEN refuse_write($10::text) END), (CASE WHEN (SELECT count(*) FROM groups_0) <> (SELECT count(DISTINCT g) FROM fresh_0) THEN refuse_write($11::text) END)) AS r0;

-- CardEnumerationRepository.insert
WITH counted_0 AS (INSERT INTO card_enumeration_counts (tenant_id, group_digest, number_digest, counted_by, created_at)
         SELECT $1::uuid, g, n, c, $2::timestamptz
           FROM unnest($3::bytea[], $4::bytea[],
                       $5::uuid[]) AS r(g, n, c)
         ON CONFLICT (tenant_id, group_digest, number_digest, counted_by) DO UPDATE SET created_at = EXCLUDED.created_at)
  SELECT NULL AS r0;

-- CardEnumerationRepository.markCounted
UPDATE tokens SET fingerprint_groups = NULL WHERE tenant_id = $1 AND id = ANY($2::varchar[]);

-- CardEnumerationRepository.deleteCountedBefore
DELETE FROM card_enumeration_counts WHERE created_at <= $1;

-- CardEnumerationRepository.deleteCountedBefore
DELETE FROM card_enumeration_groups WHERE counted_at <= $1;
