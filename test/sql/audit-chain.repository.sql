-- AuditChainRepository.heads (heads)
SELECT tenant_id, seq, hash FROM audit_chain_heads ORDER BY tenant_id;

-- AuditChainRepository.heads (headsOfTenant)
SELECT tenant_id, seq, hash FROM audit_chain_heads WHERE tenant_id = $1 ORDER BY tenant_id;

-- AuditChainRepository.sealedRowsAfter
SELECT id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, token_type, written, pos, seq, prev_hash, hash, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_text
  FROM audit_logs
  WHERE tenant_id = $1 AND seq > $2
  ORDER BY seq
  LIMIT $3;
