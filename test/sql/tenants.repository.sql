-- TenantsRepository.lockBootstrap
SELECT pg_advisory_xact_lock($1);

-- TenantsRepository.setIfUnset
UPDATE tenants SET key_version = COALESCE(key_version, $2), wrapped_key = COALESCE(wrapped_key, $3)
  WHERE id = $1 RETURNING key_version, wrapped_key;

-- TenantsRepository.lockWrappedUnderOther
SELECT id, key_version, wrapped_key FROM tenants WHERE key_version <> $1 FOR UPDATE;

-- TenantsRepository.countByVersion
SELECT key_version, count(*)::int AS tenants FROM tenants
  WHERE wrapped_key IS NOT NULL GROUP BY key_version ORDER BY key_version;
