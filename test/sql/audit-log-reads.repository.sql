-- AuditLogReadsRepository.page (page)
SELECT id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, created_at,
        to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at
   FROM audit_logs
  WHERE tenant_id = $1 AND entity_type = 'token' AND token_type = $2 AND created_at >= $3::timestamptz AND created_at < $4::timestamptz AND (created_at, id) < ($5::timestamptz, $6::uuid)
  ORDER BY created_at DESC, id DESC
  LIMIT $7;

-- AuditLogReadsRepository.page (numberedPage)
SELECT id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, created_at,
        to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at
   FROM audit_logs
  WHERE tenant_id = $1 AND entity_type = 'token' AND token_type = $2 AND created_at >= $3::timestamptz AND created_at < $4::timestamptz AND (created_at, id) < ($5::timestamptz, $6::uuid)
  ORDER BY created_at DESC, id DESC
  LIMIT $7 OFFSET $8;

-- AuditLogReadsRepository.count
SELECT count(*)::int AS n
  FROM audit_logs
  WHERE tenant_id = $1 AND entity_type = 'token' AND token_type = $2 AND created_at >= $3::timestamptz AND created_at < $4::timestamptz AND (created_at, id) < ($5::timestamptz, $6::uuid);
