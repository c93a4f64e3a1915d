-- MasterKeyChecksRepository.lock
SELECT pg_advisory_xact_lock($1);

-- MasterKeyChecksRepository.all
SELECT version, check_value, provider, threshold, shares FROM master_key_checks
  ORDER BY created_at, version;

-- MasterKeyChecksRepository.signingKeyVersions
SELECT DISTINCT master_key_version FROM audit_signing_keys WHERE master_key_version IS NOT NULL;

-- MasterKeyChecksRepository.record
INSERT INTO master_key_checks (version, check_value, provider, threshold, shares, created_at) VALUES ($1, $2, $3, $4, $5, clock_timestamp())
  ON CONFLICT (version) DO NOTHING RETURNING version;
