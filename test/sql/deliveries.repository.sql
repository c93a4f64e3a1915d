-- DeliveriesRepository.claimDue
WITH due AS (
    SELECT d.tenant_id, d.id
      FROM webhook_deliveries d
      JOIN webhooks w ON w.tenant_id = d.tenant_id AND w.id = d.webhook_id
     WHERE d.status = 'pending' AND d.next_attempt_at <= $1
       AND (d.leased_until IS NULL OR d.leased_until < $1)
       AND w.status = 'enabled'
       AND NOT EXISTS (
         SELECT 1 FROM webhook_deliveries e
          WHERE e.tenant_id = d.tenant_id AND e.webhook_id = d.webhook_id AND e.entity_id = d.entity_id
            AND e.status = 'pending' AND e.seq < d.seq)
     ORDER BY d.next_attempt_at, d.seq
     LIMIT $3
     FOR UPDATE OF d SKIP LOCKED
  )
  UPDATE webhook_deliveries d
     SET leased_until = $2, attempts = d.attempts + 1, updated_at = $1
    FROM due, webhook_events ev, webhooks w
   WHERE d.tenant_id = due.tenant_id AND d.id = due.id
     AND ev.tenant_id = d.tenant_id AND ev.id = d.event_id
     AND w.tenant_id = d.tenant_id AND w.id = d.webhook_id
  RETURNING d.tenant_id, d.id, d.webhook_id, d.event_id, d.event_type, d.attempts,
            ev.data AS event_data, ev.created_at AS event_created_at, w.url, w.secret;

-- DeliveriesRepository.recordSuccess
WITH done AS (
    UPDATE webhook_deliveries
       SET status = 'succeeded', last_status_code = $4, next_attempt_at = NULL, leased_until = NULL,
           updated_at = $5
     WHERE tenant_id = $1 AND id = $2 AND attempts = $3 AND status = 'pending'
    RETURNING tenant_id, webhook_id
  ), streak AS (
    UPDATE webhooks w SET consecutive_failures = 0
      FROM done WHERE w.tenant_id = done.tenant_id AND w.id = done.webhook_id AND w.consecutive_failures > 0
  )
  SELECT webhook_id FROM done;

-- DeliveriesRepository.recordFailure (recordFailure (retried))
UPDATE webhook_deliveries
     SET last_status_code = $4, next_attempt_at = $5, leased_until = NULL, updated_at = $6
   WHERE tenant_id = $1 AND id = $2 AND attempts = $3 AND status = 'pending'
  RETURNING 1;

-- DeliveriesRepository.recordFailure (recordFailure (failed for good))
WITH done AS (
    UPDATE webhook_deliveries
       SET status = 'failed', last_status_code = $4, next_attempt_at = NULL, leased_until = NULL,
           updated_at = $5
     WHERE tenant_id = $1 AND id = $2 AND attempts = $3 AND status = 'pending'
    RETURNING tenant_id, webhook_id
  ), streak AS (
    UPDATE webhooks w
       SET consecutive_failures = w.consecutive_failures + 1,
           status = CASE WHEN w.consecutive_failures + 1 >= $6 THEN 'disabled' ELSE w.status END
      FROM done WHERE w.tenant_id = done.tenant_id AND w.id = done.webhook_id
    RETURNING w.status, w.consecutive_failures
  )
  SELECT (SELECT status = 'disabled' AND consecutive_failures = $6 FROM streak) AS disabled FROM done;

-- DeliveriesRepository.release
UPDATE webhook_deliveries d
    SET leased_until = NULL, attempts = d.attempts - 1, updated_at = $4
   FROM unnest($1::uuid[], $2::uuid[], $3::int[]) AS c(tenant_id, id, attempts)
  WHERE d.tenant_id = c.tenant_id AND d.id = c.id AND d.attempts = c.attempts AND d.status = 'pending';

-- DeliveriesRepository.purgeEndedEvents
DELETE FROM webhook_events e WHERE e.created_at < $1
  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                   WHERE d.tenant_id = e.tenant_id AND d.event_id = e.id AND d.status = 'pending');
