-- ConnectionsRepository.insert
INSERT INTO connections (tenant_id, id, formula_id, method, display_name, fields, secrets, accepted_countries, accepted_currencies, active, environment, status, status_reason, three_d_secure_enabled, version, created_by, created_at, updated_at, deleted_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19);

-- ConnectionsRepository.update
UPDATE connections
  SET formula_id = $3, method = $4, display_name = $5, fields = $6, secrets = $7, accepted_countries = $8, accepted_currencies = $9, active = $10, environment = $11, status = $12, status_reason = $13, three_d_secure_enabled = $14, updated_at = $15, version = version + 1
  WHERE tenant_id = $1 AND id = $2
  RETURNING tenant_id AS "tenantId", id, formula_id AS "formulaId", method, display_name AS "displayName", fields, secrets, accepted_countries AS "acceptedCountries", accepted_currencies AS "acceptedCurrencies", active, environment, status, status_reason AS "statusReason", three_d_secure_enabled AS "threeDSecureEnabled", version, created_by AS "createdBy", created_at AS "createdAt", updated_at AS "updatedAt", deleted_at AS "deletedAt";

-- ConnectionsRepository.list
SELECT tenant_id AS "tenantId", id, formula_id AS "formulaId", method, display_name AS "displayName", fields, secrets, accepted_countries AS "acceptedCountries", accepted_currencies AS "acceptedCurrencies", active, environment, status, status_reason AS "statusReason", three_d_secure_enabled AS "threeDSecureEnabled", version, created_by AS "createdBy", created_at AS "createdAt", updated_at AS "updatedAt", deleted_at AS "deletedAt" FROM connections WHERE tenant_id = $1 AND deleted_at IS NULL
  ORDER BY created_at ASC, id ASC;

-- ConnectionsRepository.find (live)
SELECT tenant_id AS "tenantId", id, formula_id AS "formulaId", method, display_name AS "displayName", fields, secrets, accepted_countries AS "acceptedCountries", accepted_currencies AS "acceptedCurrencies", active, environment, status, status_reason AS "statusReason", three_d_secure_enabled AS "threeDSecureEnabled", version, created_by AS "createdBy", created_at AS "createdAt", updated_at AS "updatedAt", deleted_at AS "deletedAt"
  FROM connections
  WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL;

-- ConnectionsRepository.find (including deleted)
SELECT tenant_id AS "tenantId", id, formula_id AS "formulaId", method, display_name AS "displayName", fields, secrets, accepted_countries AS "acceptedCountries", accepted_currencies AS "acceptedCurrencies", active, environment, status, status_reason AS "statusReason", three_d_secure_enabled AS "threeDSecureEnabled", version, created_by AS "createdBy", created_at AS "createdAt", updated_at AS "updatedAt", deleted_at AS "deletedAt"
  FROM connections
  WHERE tenant_id = $1 AND id = $2;

-- ConnectionsRepository.lock
SELECT tenant_id AS "tenantId", id, formula_id AS "formulaId", method, display_name AS "displayName", fields, secrets, accepted_countries AS "acceptedCountries", accepted_currencies AS "acceptedCurrencies", active, environment, status, status_reason AS "statusReason", three_d_secure_enabled AS "threeDSecureEnabled", version, created_by AS "createdBy", created_at AS "createdAt", updated_at AS "updatedAt", deleted_at AS "deletedAt" FROM connections
  WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL FOR UPDATE;

-- ConnectionsRepository.hasTransactions
SELECT 1 AS found FROM transactions WHERE tenant_id = $1 AND connection_id = $2 LIMIT 1;

-- ConnectionsRepository.softDelete
UPDATE connections SET deleted_at = $3, active = false WHERE tenant_id = $1 AND id = $2;

-- ConnectionsRepository.delete
DELETE FROM connections WHERE tenant_id = $1 AND id = $2;

-- ConnectionsRepository.findPending
SELECT tenant_id AS "tenantId", id FROM connections WHERE status = 'pending' AND deleted_at IS NULL
  ORDER BY updated_at ASC LIMIT $1;

-- ConnectionsRepository.findPendingOne
SELECT tenant_id AS "tenantId", id, formula_id AS "formulaId", method, display_name AS "displayName", fields, secrets, accepted_countries AS "acceptedCountries", accepted_currencies AS "acceptedCurrencies", active, environment, status, status_reason AS "statusReason", three_d_secure_enabled AS "threeDSecureEnabled", version, created_by AS "createdBy", created_at AS "createdAt", updated_at AS "updatedAt", deleted_at AS "deletedAt" FROM connections
  WHERE tenant_id = $1 AND id = $2 AND status = 'pending' AND deleted_at IS NULL LIMIT 1;

-- ConnectionsRepository.recordVerification
UPDATE connections SET status = $4, status_reason = $5
  WHERE tenant_id = $1 AND id = $2 AND version = $3 AND status = 'pending' RETURNING id;
