-- AuditSigningKeysRepository.list (all)
SELECT id, name, key_id, public_key, sealed_seed, master_key_version, created_at
  FROM audit_signing_keys
  ORDER BY created_at, id;

-- AuditSigningKeysRepository.list (allInChange)
SELECT id, name, key_id, public_key, sealed_seed, master_key_version, created_at
  FROM audit_signing_keys
  ORDER BY created_at, id;

-- AuditSigningKeysRepository.reseal
UPDATE audit_signing_keys SET sealed_seed = $2, master_key_version = $3 WHERE id = $1;

-- AuditSigningKeysRepository.insert
INSERT INTO audit_signing_keys (id, name, key_id, public_key, sealed_seed, master_key_version, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7);
