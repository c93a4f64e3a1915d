-- DataKeyRotationRepository.lock
SELECT pg_advisory_xact_lock($1);

-- DataKeyRotationRepository.running
SELECT id FROM data_key_rotations WHERE finished_at IS NULL;

-- DataKeyRotationRepository.start
INSERT INTO data_key_rotations (id, started_at) VALUES ($1, $2);

-- DataKeyRotationRepository.finish
UPDATE data_key_rotations SET finished_at = $2 WHERE id = $1;

-- DataKeyRotationRepository.retireUnused
DELETE FROM tenant_data_keys k
  WHERE k.generation < (SELECT COALESCE(max(d.generation), 0) FROM tenant_data_keys d WHERE d.tenant_id = k.tenant_id)
    AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.tenant_id = k.tenant_id AND t.data_key = k.generation)
    AND NOT EXISTS (SELECT 1 FROM token_cvcs c WHERE c.tenant_id = k.tenant_id AND c.data_key = k.generation);

-- DataKeyRotationRepository.lockStaleTokens
SELECT t.tenant_id, t.id, t.data AS sealed, t.data_key, (SELECT COALESCE(max(d.generation), 0) FROM tenant_data_keys d WHERE d.tenant_id = t.tenant_id) AS target FROM tokens t
  WHERE (t.tenant_id, t.id) > ($1::uuid, $2::varchar) AND t.data_key < (SELECT COALESCE(max(d.generation), 0) FROM tenant_data_keys d WHERE d.tenant_id = t.tenant_id)
  ORDER BY t.tenant_id, t.id LIMIT $3 FOR UPDATE OF t SKIP LOCKED;

-- DataKeyRotationRepository.lockStaleCvcs
SELECT c.tenant_id, c.token_id AS id, c.cvc AS sealed, c.data_key, (SELECT COALESCE(max(d.generation), 0) FROM tenant_data_keys d WHERE d.tenant_id = c.tenant_id) AS target
   FROM token_cvcs c
  WHERE c.data_key < (SELECT COALESCE(max(d.generation), 0) FROM tenant_data_keys d WHERE d.tenant_id = c.tenant_id) LIMIT $1 FOR UPDATE OF c SKIP LOCKED;

-- DataKeyRotationRepository.replace
UPDATE tokens x SET data = decode(v.sealed, 'base64'), data_key = v.data_key
   FROM unnest($1::uuid[], $2::varchar[], $3::text[], $4::int[], $5::int[]) AS v(tenant_id, id, sealed, data_key, was)
  WHERE x.tenant_id = v.tenant_id AND x.id = v.id AND x.data_key = v.was;

-- DataKeyRotationRepository.progress
SELECT (SELECT count(*) FROM tokens t WHERE t.data_key < (SELECT COALESCE(max(d.generation), 0) FROM tenant_data_keys d WHERE d.tenant_id = t.tenant_id))::int AS stale,
  (SELECT count(*) FROM token_cvcs c WHERE c.data_key < (SELECT COALESCE(max(d.generation), 0) FROM tenant_data_keys d WHERE d.tenant_id = c.tenant_id))::int AS cvcs,
  (SELECT count(*) FROM tokens)::int AS tokens;
