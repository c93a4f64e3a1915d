-- MasterKeyChecksRepository.lock
SELECT pg_advisory_xact_lock($1);

-- MasterKeyChecksRepository.all
SELECT version, check_value FROM master_key_checks;

-- MasterKeyChecksRepository.record
INSERT INTO master_key_checks (version, check_value, created_at) VALUES ($1, $2, now())
  ON CONFLICT (version) DO NOTHING;
