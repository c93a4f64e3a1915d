-- ApplicationsRepository.allowedOriginsOf
SELECT allowed_origins FROM applications WHERE id = $1 AND type = 'public';

-- ApplicationsRepository.delete
WITH app AS (DELETE FROM applications WHERE tenant_id = $1 AND id = $2),
       keys AS (DELETE FROM api_keys WHERE tenant_id = $1 AND application_id = $2 RETURNING id, created_by, created_at)
  SELECT id, created_by, created_at FROM keys ORDER BY created_at, id;

-- ApplicationsRepository.lockTenant
SELECT 1 FROM tenants WHERE id = $1 FOR NO KEY UPDATE;

-- ApplicationsRepository.countOthersHoldingWithKey
SELECT count(*)::int AS others FROM applications a
  WHERE a.tenant_id = $1 AND a.id <> $2 AND a.permissions @> $3::text[]
    AND EXISTS (SELECT 1 FROM api_keys k WHERE k.tenant_id = a.tenant_id AND k.application_id = a.id);

-- ApplicationsRepository.insertKeyListingKeys
WITH added AS (INSERT INTO api_keys (tenant_id, id, application_id, key_hash, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, created_by, created_at)
  SELECT id, created_by, created_at FROM api_keys WHERE tenant_id = $1 AND application_id = $3
  UNION ALL SELECT id, created_by, created_at FROM added
  ORDER BY created_at, id;

-- ApplicationsRepository.findKeyHolder
SELECT k.id AS key_id, k.key_hash, a.id AS application_id, a.tenant_id, a.type, a.permissions, a.rules
   FROM api_keys k JOIN applications a ON a.id = k.application_id AND a.tenant_id = k.tenant_id
  WHERE k.key_hash = $1;
