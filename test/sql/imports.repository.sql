-- ImportsRepository.insertKey
INSERT INTO token_import_keys (tenant_id, fingerprint, algorithm, public_key, private_key, created_at)
  VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (tenant_id) DO NOTHING
  RETURNING tenant_id, fingerprint, algorithm, public_key, private_key, created_at;

-- ImportsRepository.findKey
SELECT tenant_id, fingerprint, algorithm, public_key, private_key, created_at
  FROM token_import_keys
  WHERE tenant_id = $1;

-- ImportsRepository.insert
INSERT INTO token_imports (tenant_id, id, status, format, file_bytes, created_by, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7)
  RETURNING tenant_id, id, status, format, file_bytes, created_by, created_at, started_at, completed_at, total, imported, duplicates, failed, lines_done, error_code;

-- ImportsRepository.find
SELECT tenant_id, id, status, format, file_bytes, created_by, created_at, started_at, completed_at, total, imported, duplicates, failed, lines_done, error_code
  FROM token_imports
  WHERE tenant_id = $1 AND id = $2;

-- ImportsRepository.unfinished
SELECT tenant_id, id FROM token_imports WHERE status IN ('pending', 'processing')
  ORDER BY created_at, id LIMIT $1;

-- ImportsRepository.start
UPDATE token_imports SET status = 'processing', total = $3, started_at = coalesce(started_at, $4)
  WHERE tenant_id = $1 AND id = $2 AND status IN ('pending', 'processing') RETURNING id;

-- ImportsRepository.checkpoint
UPDATE token_imports
    SET lines_done = $4, imported = imported + $5, duplicates = duplicates + $6, failed = failed + $7
  WHERE tenant_id = $1 AND id = $2 AND status = 'processing' AND lines_done = $3 RETURNING id;

-- ImportsRepository.finish
UPDATE token_imports SET status = $3, error_code = $4, completed_at = $5
  WHERE tenant_id = $1 AND id = $2 AND status IN ('pending', 'processing') RETURNING id;

-- ImportsRepository.insertResults
INSERT INTO token_import_results (tenant_id, import_id, line, status, external_id, token_id, error_field, error_code, connection)
  SELECT tenant_id, import_id, line, status, external_id, token_id, error_field, error_code, connection FROM jsonb_to_recordset($1::jsonb) AS r(tenant_id uuid, import_id uuid, line integer, status varchar, external_id varchar, token_id varchar, error_field varchar, error_code varchar, connection bytea);

-- ImportsRepository.results
SELECT tenant_id, import_id, line, status, external_id, token_id, error_field, error_code FROM token_import_results WHERE tenant_id = $1 AND import_id = $2
  ORDER BY line LIMIT $3 OFFSET $4;

-- ImportsRepository.results
SELECT count(*)::int AS n FROM token_import_results WHERE tenant_id = $1 AND import_id = $2;
