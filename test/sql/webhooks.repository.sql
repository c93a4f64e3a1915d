-- WebhooksRepository.insert
INSERT INTO webhooks (tenant_id, id, name, url, events, status, notify_email, secret, consecutive_failures, created_by, created_at, modified_by, modified_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13);

-- WebhooksRepository.findOne
SELECT tenant_id AS "tenantId", id, name, url, events, status, notify_email AS "notifyEmail", secret, consecutive_failures AS "consecutiveFailures", created_by AS "createdBy", created_at AS "createdAt", modified_by AS "modifiedBy", modified_at AS "modifiedAt"
  FROM webhooks
  WHERE tenant_id = $1 AND id = $2;

-- WebhooksRepository.findLocked
SELECT tenant_id AS "tenantId", id, name, url, events, status, notify_email AS "notifyEmail", secret, consecutive_failures AS "consecutiveFailures", created_by AS "createdBy", created_at AS "createdAt", modified_by AS "modifiedBy", modified_at AS "modifiedAt"
  FROM webhooks
  WHERE tenant_id = $1 AND id = $2 FOR UPDATE;

-- WebhooksRepository.page (first)
SELECT w.tenant_id AS "tenantId", w.id, w.name, w.url, w.events, w.status, w.notify_email AS "notifyEmail", w.secret, w.consecutive_failures AS "consecutiveFailures", w.created_by AS "createdBy", w.created_at AS "createdAt", w.modified_by AS "modifiedBy", w.modified_at AS "modifiedAt", to_char(w.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at
   FROM webhooks w WHERE w.tenant_id = $1
  ORDER BY w.created_at ASC, w.id ASC LIMIT $2;

-- WebhooksRepository.page (after)
SELECT w.tenant_id AS "tenantId", w.id, w.name, w.url, w.events, w.status, w.notify_email AS "notifyEmail", w.secret, w.consecutive_failures AS "consecutiveFailures", w.created_by AS "createdBy", w.created_at AS "createdAt", w.modified_by AS "modifiedBy", w.modified_at AS "modifiedAt", to_char(w.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at
   FROM webhooks w WHERE w.tenant_id = $1 AND (w.created_at, w.id) > ($2::timestamptz, $3::uuid)
  ORDER BY w.created_at ASC, w.id ASC LIMIT $4;

-- WebhooksRepository.update
UPDATE webhooks
  SET name = $3, url = $4, events = $5, status = $6, notify_email = $7, consecutive_failures = $8, modified_by = $9, modified_at = $10
  WHERE tenant_id = $1 AND id = $2;

-- WebhooksRepository.delete
DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2 RETURNING id;

-- WebhooksRepository.deliveryPage
SELECT count(*)::int AS total FROM webhook_deliveries d WHERE d.tenant_id = $1 AND d.webhook_id = $2;

-- WebhooksRepository.deliveryPage
SELECT d.tenant_id AS "tenantId", d.id, d.seq, d.webhook_id AS "webhookId", d.event_id AS "eventId", d.event_type AS "eventType", d.entity_id AS "entityId", d.status, d.attempts, d.last_status_code AS "lastStatusCode", d.next_attempt_at AS "nextAttemptAt", d.leased_until AS "leasedUntil", d.created_at AS "createdAt", d.updated_at AS "updatedAt"
  FROM webhook_deliveries d
  WHERE d.tenant_id = $1 AND d.webhook_id = $2
  ORDER BY d.created_at DESC, d.seq DESC
  OFFSET $3
  LIMIT $4;

-- WebhooksRepository.retryDelivery
UPDATE webhook_deliveries
    SET status = 'pending', next_attempt_at = $4, leased_until = NULL, updated_at = $4
  WHERE tenant_id = $1 AND webhook_id = $2 AND id = $3
  RETURNING tenant_id AS "tenantId", id, seq, webhook_id AS "webhookId", event_id AS "eventId", event_type AS "eventType", entity_id AS "entityId", status, attempts, last_status_code AS "lastStatusCode", next_attempt_at AS "nextAttemptAt", leased_until AS "leasedUntil", created_at AS "createdAt", updated_at AS "updatedAt";
