-- TokenSearchRepository.findOffsetPage
SELECT count(*)::int AS total
  FROM tokens t
  WHERE t.tenant_id = $1 AND (t.expires_at IS NULL OR t.expires_at > $2) AND ((t.type = $3 AND EXISTS (SELECT 1
  FROM token_search_indexes s
  WHERE s.tenant_id = t.tenant_id AND s.token_id = t.id AND s.digest = $4))) AND (CASE WHEN EXISTS (SELECT 1
  FROM unnest(t.containers) AS c
  WHERE left(c, char_length($5::text)) = $5::text) THEN TRUE ELSE FALSE END);

-- TokenSearchRepository.findOffsetPage
SELECT t.id, t.tenant_id, t.type, t.data_key, t.mask, t.card_brand, t.card_bin, t.fingerprint, t.fingerprint_groups, t.fingerprint_expression, t.metadata, t.search_indexes, t.containers, t.expires_at, t.created_by, t.created_at, t.modified_by, t.modified_at
  FROM tokens t
  WHERE t.tenant_id = $1 AND (t.expires_at IS NULL OR t.expires_at > $2) AND ((t.type = $3 AND EXISTS (SELECT 1
  FROM token_search_indexes s
  WHERE s.tenant_id = t.tenant_id AND s.token_id = t.id AND s.digest = $4))) AND (CASE WHEN EXISTS (SELECT 1
  FROM unnest(t.containers) AS c
  WHERE left(c, char_length($5::text)) = $5::text) THEN TRUE ELSE FALSE END)
  ORDER BY t.created_at DESC, t.id DESC
  LIMIT $6
  OFFSET $7;

-- TokenSearchRepository.findKeysetPage
SELECT t.id, t.tenant_id, t.type, t.data_key, t.mask, t.card_brand, t.card_bin, t.fingerprint, t.fingerprint_groups, t.fingerprint_expression, t.metadata, t.search_indexes, t.containers, t.expires_at, t.created_by, t.created_at, t.modified_by, t.modified_at, to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at
  FROM tokens t WHERE t.tenant_id = $1 AND (t.expires_at IS NULL OR t.expires_at > $2) AND ((t.type = $3 AND EXISTS (SELECT 1 FROM token_search_indexes s WHERE s.tenant_id = t.tenant_id AND s.token_id = t.id AND s.digest = $4))) AND (CASE WHEN EXISTS (SELECT 1 FROM unnest(t.containers) AS c WHERE left(c, char_length($5::text)) = $5::text) THEN TRUE ELSE FALSE END) AND (t.created_at, t.id) < ($6::timestamptz, $7::text) ORDER BY t.created_at DESC, t.id DESC LIMIT $8;
