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
SELECT t.key_version, t.wrapped_key,
    ARRAY(SELECT generation FROM tenant_data_keys d WHERE d.tenant_id = t.id ORDER BY generation) AS generations,
    ARRAY(SELECT encode(sealed_key, 'base64') FROM tenant_data_keys d WHERE d.tenant_id = t.id
           ORDER BY generation) AS sealed_keys
  FROM tenants t WHERE id = $1;

-- TenantsRepository.lastDataKeys
SELECT t.id, COALESCE(max(d.generation), 0)::int AS generation
   FROM tenants t LEFT JOIN tenant_data_keys d ON d.tenant_id = t.id
  WHERE t.wrapped_key IS NOT NULL AND t.id <> $1 GROUP BY t.id ORDER BY t.id;

-- TenantsRepository.addDataKeys
INSERT INTO tenant_data_keys (tenant_id, generation, sealed_key)
  SELECT id, g, decode(k, 'base64') FROM unnest($1::uuid[], $2::int[], $3::text[]) AS v(id, g, k);

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
