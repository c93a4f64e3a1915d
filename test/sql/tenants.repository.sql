-- TenantsRepository.insert
INSERT INTO tenants (id, name, key_version, wrapped_key, created_at) VALUES ($1, $2, $3, $4, $5);

-- TenantsRepository.findById
SELECT id, name, key_version AS "keyVersion", wrapped_key AS "wrappedKey", created_at AS "createdAt"
  FROM tenants
  WHERE id = $1;

-- TenantsRepository.count
SELECT count(*)::int AS tenants FROM tenants WHERE id <> $1;

-- TenantsRepository.ensureSystemTenant
INSERT INTO tenants (id, name, created_at)
  VALUES ($1, $2, clock_timestamp())
  ON CONFLICT (id) DO NOTHING;

-- TenantsRepository.lockBootstrap
SELECT pg_advisory_xact_lock($1);

-- TenantsRepository.find
SELECT key_version, wrapped_key FROM tenants WHERE id = $1;

-- TenantsRepository.setIfUnset
UPDATE tenants SET key_version = COALESCE(key_version, $2), wrapped_key = COALESCE(wrapped_key, $3)
  WHERE id = $1 RETURNING key_version, wrapped_key;

-- TenantsRepository.lockWrappedUnderOther (lockWrappedUnderOther)
SELECT id, key_version, wrapped_key FROM tenants WHERE key_version <> $1 FOR UPDATE;

-- TenantsRepository.lockWrappedUnderOther (lockWrappedUnderOtherBatch)
SELECT id, key_version, wrapped_key FROM tenants WHERE key_version <> $1
  ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED;

-- TenantsRepository.replace
UPDATE tenants SET key_version = $2, wrapped_key = $3 WHERE id = $1;

-- TenantsRepository.countByVersion
SELECT key_version, count(*)::int AS tenants FROM tenants
  WHERE wrapped_key IS NOT NULL GROUP BY key_version ORDER BY key_version;

-- TenantsRepository.sample
SELECT id, key_version, wrapped_key
  FROM tenants
  WHERE key_version = $1 AND wrapped_key IS NOT NULL
  LIMIT 1;
