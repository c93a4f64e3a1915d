-- AuditChainRepository.tenantsWithUnsealedRows
SELECT DISTINCT tenant_id FROM audit_logs WHERE seq IS NULL LIMIT $1;

-- AuditChainRepository.head
SELECT tenant_id, seq, hash FROM audit_chain_heads WHERE tenant_id = $1;

-- AuditChainRepository.heads (heads)
SELECT tenant_id, seq, hash FROM audit_chain_heads ORDER BY tenant_id;

-- AuditChainRepository.heads (headsOfTenant)
SELECT tenant_id, seq, hash FROM audit_chain_heads WHERE tenant_id = $1 ORDER BY tenant_id;

-- AuditChainRepository.unsealedRows
SELECT id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, token_type, seq, prev_hash, hash, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_text
  FROM audit_logs
  WHERE tenant_id = $1 AND seq IS NULL
  ORDER BY created_at, id
  LIMIT $2;

-- AuditChainRepository.sealedRowsAfter
SELECT id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, token_type, seq, prev_hash, hash, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_text
  FROM audit_logs
  WHERE tenant_id = $1 AND seq > $2
  ORDER BY seq
  LIMIT $3;

-- AuditChainRepository.seal
UPDATE audit_logs AS a SET seq = v.seq, prev_hash = v.prev_hash, hash = v.hash
   FROM (VALUES ($2::uuid, $3::bigint, $4::bytea, $5::bytea)) AS v(id, seq, prev_hash, hash)
  WHERE a.tenant_id = $1::uuid AND a.id = v.id AND a.seq IS NULL;

-- AuditChainRepository.seal
INSERT INTO audit_chain_heads (tenant_id, seq, hash) VALUES ($1, $2, $3)
  ON CONFLICT (tenant_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash;
