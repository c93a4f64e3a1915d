-- WebhookEventsRepository.insert
WITH given_0 AS (
               SELECT * FROM jsonb_to_recordset($1::jsonb)
                 AS g(tenant_id uuid, id uuid, type text, entity_id text, data jsonb, ord int)),
  hooks_0 AS (
               SELECT g.id AS event_id, w.id AS webhook_id, g.ord
                 FROM given_0 g JOIN webhooks w ON w.tenant_id = g.tenant_id
                WHERE w.status = 'enabled' AND g.type = ANY (w.events)),
  events_0 AS (
               INSERT INTO webhook_events (tenant_id, id, type, entity_id, data, created_at)
               SELECT g.tenant_id, g.id, g.type, g.entity_id, g.data, $2::timestamptz FROM given_0 g
                WHERE EXISTS (SELECT 1 FROM hooks_0 h WHERE h.event_id = g.id)
                ORDER BY g.ord
               RETURNING tenant_id, id, type, entity_id),
  fanned_0 AS (
               INSERT INTO webhook_deliveries
                 (tenant_id, id, webhook_id, event_id, event_type, entity_id, status, next_attempt_at, created_at, updated_at)
               SELECT e.tenant_id, gen_random_uuid(), h.webhook_id, e.id, e.type, e.entity_id, 'pending',
                      $2::timestamptz, $2::timestamptz, $2::timestamptz
                 FROM events_0 e JOIN hooks_0 h ON h.event_id = e.id
                ORDER BY h.ord, h.webhook_id
               RETURNING 1)
  SELECT (SELECT count(*)::int FROM fanned_0) AS r0;
