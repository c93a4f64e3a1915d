-- TokensRepository.findLive
SELECT id, tenant_id, type, data, data_key, mask, card_brand, card_bin, fingerprint, fingerprint_groups, fingerprint_expression, metadata, search_indexes, containers, expires_at, created_by, created_at, modified_by, modified_at
  FROM tokens
  WHERE tenant_id = $1 AND id = $2 AND (expires_at IS NULL OR expires_at > $3);

-- TokensRepository.lockLive
SELECT id, tenant_id, type, data, data_key, mask, card_brand, card_bin, fingerprint, fingerprint_groups, fingerprint_expression, metadata, search_indexes, containers, expires_at, created_by, created_at, modified_by, modified_at FROM tokens
  WHERE tenant_id = $1 AND id = $2 AND (expires_at IS NULL OR expires_at > $3) FOR UPDATE;

-- TokensRepository.findSealedData
SELECT id, data, data_key FROM tokens WHERE tenant_id = $1 AND id = ANY($2::varchar[]);

-- TokensRepository.findLiveByIds
SELECT id, tenant_id, type, mask, card_brand, card_bin, fingerprint, fingerprint_groups, fingerprint_expression, metadata, search_indexes, containers, expires_at, created_by, created_at, modified_by, modified_at FROM tokens
  WHERE tenant_id = $1 AND id = ANY($2::varchar[]) AND (expires_at IS NULL OR expires_at > $3);

-- TokensRepository.findLiveByFingerprints
SELECT id, tenant_id, type, mask, card_brand, card_bin, fingerprint, fingerprint_groups, fingerprint_expression, metadata, search_indexes, containers, expires_at, created_by, created_at, modified_by, modified_at FROM tokens
  WHERE tenant_id = $1 AND fingerprint = ANY($2::varchar[]) AND (expires_at IS NULL OR expires_at > $3)
  ORDER BY created_at ASC, id ASC;

-- TokensRepository.findLiveCards
SELECT t.id, t.fingerprint, t.created_at FROM unnest($2::varchar[]) AS f(fingerprint)
  CROSS JOIN LATERAL (
    SELECT id, fingerprint, created_at, type, expires_at FROM tokens
     WHERE tenant_id = $1 AND fingerprint = f.fingerprint OFFSET 0) AS t
  WHERE t.type = 'card' AND (t.expires_at IS NULL OR t.expires_at > $3);

-- TokensRepository.lockForDeduplication
SELECT count(pg_advisory_xact_lock(72201, k))
  FROM (SELECT k FROM unnest($1::int[]) AS k ORDER BY k) AS ordered;

-- TokensRepository.insert (named)
WITH tokens_0 AS (INSERT INTO tokens (id, tenant_id, type, data, data_key, mask, card_brand, card_bin, fingerprint, fingerprint_groups, fingerprint_expression, metadata, search_indexes, containers, expires_at, created_by, created_at, modified_by, modified_at)
                SELECT id, tenant_id, type, data, data_key, mask, card_brand, card_bin, fingerprint, fingerprint_groups, fingerprint_expression, metadata, search_indexes, containers, expires_at, created_by, created_at, modified_by, modified_at FROM jsonb_to_recordset($1::jsonb) AS r(id varchar, tenant_id uuid, type varchar, data bytea, data_key integer, mask jsonb, card_brand varchar, card_bin varchar, fingerprint varchar, fingerprint_groups bytea[], fingerprint_expression text, metadata jsonb, search_indexes text[], containers text[], expires_at timestamptz, created_by uuid, created_at timestamptz, modified_by uuid, modified_at timestamptz)
                ON CONFLICT DO NOTHING RETURNING tenant_id, id),
  indexes_0 AS (INSERT INTO token_search_indexes (token_id, tenant_id, digest)
              SELECT v.token_id, v.tenant_id, v.digest
                FROM jsonb_to_recordset($2::jsonb) AS v(token_id varchar, tenant_id uuid, digest bytea)
                JOIN tokens_0 ON tokens_0.tenant_id = v.tenant_id AND tokens_0.id = v.token_id
              ON CONFLICT DO NOTHING),
  cvcs_0 AS (INSERT INTO token_cvcs (token_id, tenant_id, cvc, data_key, expires_at)
              SELECT v.token_id, v.tenant_id, v.cvc, v.data_key, v.expires_at
                FROM jsonb_to_recordset($3::jsonb) AS v(token_id varchar, tenant_id uuid, cvc bytea, data_key integer, expires_at timestamptz)
                JOIN tokens_0 ON tokens_0.tenant_id = v.tenant_id AND tokens_0.id = v.token_id)
  SELECT (SELECT array_agg(id) FROM tokens_0) AS r0;

-- TokensRepository.insert (refused)
WITH tokens_0 AS (INSERT INTO tokens (id, tenant_id, type, data, data_key, mask, card_brand, card_bin, fingerprint, fingerprint_groups, fingerprint_expression, metadata, search_indexes, containers, expires_at, created_by, created_at, modified_by, modified_at)
                SELECT id, tenant_id, type, data, data_key, mask, card_brand, card_bin, fingerprint, fingerprint_groups, fingerprint_expression, metadata, search_indexes, containers, expires_at, created_by, created_at, modified_by, modified_at FROM jsonb_to_recordset($1::jsonb) AS r(id varchar, tenant_id uuid, type varchar, data bytea, data_key integer, mask jsonb, card_brand varchar, card_bin varchar, fingerprint varchar, fingerprint_groups bytea[], fingerprint_expression text, metadata jsonb, search_indexes text[], containers text[], expires_at timestamptz, created_by uuid, created_at timestamptz, modified_by uuid, modified_at timestamptz)
                ON CONFLICT DO NOTHING RETURNING tenant_id, id),
  indexes_0 AS (INSERT INTO token_search_indexes (token_id, tenant_id, digest)
              SELECT v.token_id, v.tenant_id, v.digest
                FROM jsonb_to_recordset($2::jsonb) AS v(token_id varchar, tenant_id uuid, digest bytea)
                JOIN tokens_0 ON tokens_0.tenant_id = v.tenant_id AND tokens_0.id = v.token_id
              ON CONFLICT DO NOTHING),
  cvcs_0 AS (INSERT INTO token_cvcs (token_id, tenant_id, cvc, data_key, expires_at)
              SELECT v.token_id, v.tenant_id, v.cvc, v.data_key, v.expires_at
                FROM jsonb_to_recordset($3::jsonb) AS v(token_id varchar, tenant_id uuid, cvc bytea, data_key integer, expires_at timestamptz)
                JOIN tokens_0 ON tokens_0.tenant_id = v.tenant_id AND tokens_0.id = v.token_id)
  SELECT (CASE WHEN (SELECT count(*) FROM tokens_0) < $4::int THEN refuse_write($5::text) END) AS r0;

-- TokensRepository.purgeExpired
DELETE FROM tokens WHERE tenant_id = $1 AND id = ANY($2::varchar[]) AND expires_at <= $3;

-- TokensRepository.replaceSearchIndexes
DELETE FROM token_search_indexes WHERE tenant_id = $1 AND token_id = $2;

-- TokensRepository.replaceSearchIndexes
INSERT INTO token_search_indexes (token_id, tenant_id, digest)
  VALUES ($1, $2, $3)
  ON CONFLICT DO NOTHING;

-- TokensRepository.update
UPDATE tokens
  SET fingerprint = $3, fingerprint_groups = $4, fingerprint_expression = $5, metadata = $6, search_indexes = $7, expires_at = $8, modified_by = $9, modified_at = $10
  WHERE tenant_id = $1 AND id = $2;

-- TokensRepository.delete
DELETE FROM tokens WHERE tenant_id = $1 AND id = $2;

-- TokensRepository.findLiveCvc
SELECT cvc, data_key FROM token_cvcs WHERE tenant_id = $1 AND token_id = $2 AND expires_at > $3;

-- TokensRepository.deleteCvc
WITH cvc_forgotten_0 AS (DELETE FROM token_cvcs
            WHERE tenant_id = $1::uuid AND token_id = $2::varchar)
  SELECT NULL AS r0;
