-- IdempotencyRepository.claim
INSERT INTO idempotency_records AS r
         (tenant_id, scope, key_digest, request_digest, claim_id, state, claimed_until, created_at, expires_at)
  VALUES ($1, $2, $3, $4, $5, 'processing', $6, $7, $8)
  ON CONFLICT (tenant_id, scope, key_digest) DO UPDATE
     SET request_digest = EXCLUDED.request_digest, claim_id = EXCLUDED.claim_id, state = 'processing',
         claimed_until = EXCLUDED.claimed_until, response_status = NULL, response_headers = NULL,
         response_body = NULL,
         resource_id = CASE WHEN r.resource_id IS NOT NULL AND r.expires_at > EXCLUDED.created_at THEN r.resource_id END,
         created_at = CASE WHEN r.resource_id IS NOT NULL AND r.expires_at > EXCLUDED.created_at THEN r.created_at ELSE EXCLUDED.created_at END,
         expires_at = CASE WHEN r.resource_id IS NOT NULL AND r.expires_at > EXCLUDED.created_at THEN r.expires_at ELSE EXCLUDED.expires_at END
   WHERE r.expires_at <= EXCLUDED.created_at
      OR (r.state = 'processing' AND r.claimed_until <= EXCLUDED.created_at
          AND (r.resource_id IS NULL OR r.request_digest = EXCLUDED.request_digest))
  RETURNING claim_id, resource_id;

-- IdempotencyRepository.find
SELECT request_digest, state, response_status, response_headers, response_body
  FROM idempotency_records WHERE tenant_id = $1 AND scope = $2 AND key_digest = $3;

-- IdempotencyRepository.complete
UPDATE idempotency_records
    SET state = 'completed', response_status = $5, response_headers = $6, response_body = $7
  WHERE tenant_id = $1 AND scope = $2 AND key_digest = $3 AND claim_id = $4;

-- IdempotencyRepository.completeWithChange
WITH idempotency_0 AS (
             UPDATE idempotency_records
                SET state = 'completed', response_status = $1::int,
                    response_headers = $2::jsonb,
                    response_body = $3::bytea
              WHERE tenant_id = $4::uuid AND scope = $5::text
                AND key_digest = $6::bytea AND claim_id = $7::uuid
             RETURNING 1)
  SELECT (CASE WHEN NOT EXISTS (SELECT 1 FROM idempotency_0) THEN refuse_write($8::text) END) AS r0;

-- IdempotencyRepository.pin
UPDATE idempotency_records
  SET resource_id = $5
  WHERE tenant_id = $1 AND scope = $2 AND key_digest = $3 AND claim_id = $4 AND state = 'processing';

-- IdempotencyRepository.release
WITH released AS (
    DELETE FROM idempotency_records
     WHERE tenant_id = $1 AND scope = $2 AND key_digest = $3 AND claim_id = $4 AND resource_id IS NULL AND state = 'processing')
  UPDATE idempotency_records SET claimed_until = $5
   WHERE tenant_id = $1 AND scope = $2 AND key_digest = $3 AND claim_id = $4 AND resource_id IS NOT NULL AND state = 'processing';

-- IdempotencyRepository.deleteExpired
DELETE FROM idempotency_records WHERE expires_at <= $1;
