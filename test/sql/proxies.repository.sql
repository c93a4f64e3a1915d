-- ProxiesRepository.insert
INSERT INTO proxies (tenant_id, id, key, name, destination_url, require_auth, created_by, created_at, modified_by, modified_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);

-- ProxiesRepository.findOne
SELECT tenant_id AS "tenantId", id, key, name, destination_url AS "destinationUrl", require_auth AS "requireAuth", created_by AS "createdBy", created_at AS "createdAt", modified_by AS "modifiedBy", modified_at AS "modifiedAt"
  FROM proxies
  WHERE tenant_id = $1 AND id = $2;

-- ProxiesRepository.findLocked
SELECT tenant_id AS "tenantId", id, key, name, destination_url AS "destinationUrl", require_auth AS "requireAuth", created_by AS "createdBy", created_at AS "createdAt", modified_by AS "modifiedBy", modified_at AS "modifiedAt"
  FROM proxies
  WHERE tenant_id = $1 AND id = $2 FOR UPDATE;

-- ProxiesRepository.findByKey
SELECT tenant_id AS "tenantId", id, key, name, destination_url AS "destinationUrl", require_auth AS "requireAuth", created_by AS "createdBy", created_at AS "createdAt", modified_by AS "modifiedBy", modified_at AS "modifiedAt"
  FROM proxies
  WHERE key = $1
  LIMIT 1;

-- ProxiesRepository.page (all)
SELECT count(*)::int AS total FROM proxies p WHERE p.tenant_id = $1;

-- ProxiesRepository.page (all)
SELECT p.tenant_id AS "tenantId", p.id, p.key, p.name, p.destination_url AS "destinationUrl", p.require_auth AS "requireAuth", p.created_by AS "createdBy", p.created_at AS "createdAt", p.modified_by AS "modifiedBy", p.modified_at AS "modifiedAt" FROM proxies p WHERE p.tenant_id = $1
  ORDER BY p.created_at ASC, p.id ASC OFFSET $2 LIMIT $3;

-- ProxiesRepository.page (filtered)
SELECT count(*)::int AS total
  FROM proxies p
  WHERE p.tenant_id = $1 AND p.id = ANY($2::uuid[]) AND p.name ILIKE $3 ESCAPE '\';

-- ProxiesRepository.page (filtered)
SELECT p.tenant_id AS "tenantId", p.id, p.key, p.name, p.destination_url AS "destinationUrl", p.require_auth AS "requireAuth", p.created_by AS "createdBy", p.created_at AS "createdAt", p.modified_by AS "modifiedBy", p.modified_at AS "modifiedAt" FROM proxies p WHERE p.tenant_id = $1 AND p.id = ANY($2::uuid[]) AND p.name ILIKE $3 ESCAPE '\'
  ORDER BY p.created_at ASC, p.id ASC OFFSET $4 LIMIT $5;

-- ProxiesRepository.update
UPDATE proxies
  SET name = $3, destination_url = $4, require_auth = $5, modified_by = $6, modified_at = $7
  WHERE tenant_id = $1 AND id = $2;

-- ProxiesRepository.delete
DELETE FROM proxies WHERE tenant_id = $1 AND id = $2 RETURNING id;
