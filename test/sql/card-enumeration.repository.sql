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
