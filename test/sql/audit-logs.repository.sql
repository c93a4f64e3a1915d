-- AuditLogsRepository.insert
WITH audit_0 AS (INSERT INTO audit_logs (id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, token_type, created_at)
             SELECT id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, token_type, created_at FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, tenant_id uuid, actor_id uuid, actor_type varchar, entity_type varchar, entity_id text, operation varchar, message text, token_type varchar, created_at timestamptz))
  SELECT NULL AS r0;
