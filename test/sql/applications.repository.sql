-- ApplicationsRepository.insert
INSERT INTO applications (tenant_id, id, name, type, permissions, rules, allowed_origins, created_by, created_at, modified_by, modified_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11);

-- ApplicationsRepository.allowedOriginsOf
SELECT allowed_origins AS "allowedOrigins" FROM applications WHERE id = $1 AND type = 'public';

-- ApplicationsRepository.findOne
SELECT tenant_id AS "tenantId", id, name, type, permissions, rules, allowed_origins AS "allowedOrigins", created_by AS "createdBy", created_at AS "createdAt", modified_by AS "modifiedBy", modified_at AS "modifiedAt"
  FROM applications
  WHERE tenant_id = $1 AND id = $2
  LIMIT 1;

-- ApplicationsRepository.lockOne
SELECT tenant_id AS "tenantId", id, name, type, permissions, rules, allowed_origins AS "allowedOrigins", created_by AS "createdBy", created_at AS "createdAt", modified_by AS "modifiedBy", modified_at AS "modifiedAt"
  FROM applications
  WHERE tenant_id = $1 AND id = $2 FOR UPDATE;

-- ApplicationsRepository.page (skip)
SELECT count(*)::int AS total FROM applications a WHERE a.tenant_id = $1;

-- ApplicationsRepository.page (skip)
SELECT a.tenant_id AS "tenantId", a.id, a.name, a.type, a.permissions, a.rules, a.allowed_origins AS "allowedOrigins", a.created_by AS "createdBy", a.created_at AS "createdAt", a.modified_by AS "modifiedBy", a.modified_at AS "modifiedAt" FROM applications a WHERE a.tenant_id = $1
  ORDER BY a.created_at ASC, a.id ASC OFFSET $2 LIMIT $3;

-- ApplicationsRepository.page (after)
SELECT count(*)::int AS total
  FROM applications a
  WHERE a.tenant_id = $1 AND a.type = ANY($2::varchar[]) AND a.id = ANY($3::uuid[]);

-- ApplicationsRepository.page (after)
SELECT a.tenant_id AS "tenantId", a.id, a.name, a.type, a.permissions, a.rules, a.allowed_origins AS "allowedOrigins", a.created_by AS "createdBy", a.created_at AS "createdAt", a.modified_by AS "modifiedBy", a.modified_at AS "modifiedAt" FROM applications a WHERE a.tenant_id = $1 AND a.type = ANY($2::varchar[]) AND a.id = ANY($3::uuid[]) AND (a.created_at, a.id) > (SELECT b.created_at, b.id FROM applications b
    WHERE b.id = $4 AND b.tenant_id = $1)
  ORDER BY a.created_at ASC, a.id ASC LIMIT $5;

-- ApplicationsRepository.update
UPDATE applications
  SET name = $3, permissions = $4, rules = $5, allowed_origins = $6, modified_by = $7, modified_at = $8
  WHERE tenant_id = $1 AND id = $2;

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

-- ApplicationsRepository.insertKey
INSERT INTO api_keys (tenant_id, id, application_id, key_hash, created_by, created_at)
  VALUES ($1, $2, $3, $4, $5, $6);

-- ApplicationsRepository.insertKeyListingKeys
WITH added AS (INSERT INTO api_keys (tenant_id, id, application_id, key_hash, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, created_by, created_at)
  SELECT id, created_by, created_at FROM api_keys WHERE tenant_id = $1 AND application_id = $3
  UNION ALL SELECT id, created_by, created_at FROM added
  ORDER BY created_at, id;

-- ApplicationsRepository.keysOf
SELECT tenant_id AS "tenantId", id, application_id AS "applicationId", key_hash AS "keyHash", created_by AS "createdBy", created_at AS "createdAt" FROM api_keys WHERE tenant_id = $1 AND application_id = ANY($2::uuid[])
  ORDER BY created_at ASC;

-- ApplicationsRepository.keysIn
SELECT tenant_id AS "tenantId", id, application_id AS "applicationId", key_hash AS "keyHash", created_by AS "createdBy", created_at AS "createdAt" FROM api_keys WHERE tenant_id = $1 AND application_id = ANY($2::uuid[])
  ORDER BY created_at ASC;

-- ApplicationsRepository.findKey
SELECT tenant_id AS "tenantId", id, application_id AS "applicationId", key_hash AS "keyHash", created_by AS "createdBy", created_at AS "createdAt"
  FROM api_keys
  WHERE tenant_id = $1 AND application_id = $2 AND id = $3
  LIMIT 1;

-- ApplicationsRepository.deleteKey
DELETE FROM api_keys WHERE tenant_id = $1 AND application_id = $2 AND id = $3;

-- ApplicationsRepository.findKeyHolder
SELECT k.id AS key_id, k.key_hash, a.id AS application_id, a.tenant_id, a.type, a.permissions, a.rules
   FROM api_keys k JOIN applications a ON a.id = k.application_id AND a.tenant_id = k.tenant_id
  WHERE k.key_hash = $1;
