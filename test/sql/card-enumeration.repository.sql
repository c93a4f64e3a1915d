-- CardEnumerationRepository.lockGroups
SELECT count(pg_advisory_xact_lock(72202, k))
  FROM (SELECT k FROM unnest($1::int[]) AS k ORDER BY k) AS ordered;

-- CardEnumerationRepository.findCounted
SELECT c.group_digest, c.number_digest, bool_or(c.counted_by = $4) AS mine
   FROM (SELECT DISTINCT g FROM unnest($2::bytea[]) AS g) AS wanted,
   LATERAL (SELECT group_digest, number_digest, counted_by FROM card_enumeration_counts
             WHERE tenant_id = $1 AND group_digest = wanted.g AND created_at > $3
            OFFSET 0) AS c
  GROUP BY c.group_digest, c.number_digest;

-- CardEnumerationRepository.findCountedAndStored
SELECT c.group_digest, c.number_digest, bool_or(c.counted_by = $4) AS mine,
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
              LIMIT 20) AS t;

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
