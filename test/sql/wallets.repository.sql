-- WalletsRepository.insertPending
INSERT INTO wallet_merchant_keys (tenant_id, id, wallet, status, slot, private_key, public_key, certificate, merchant_identifier, not_after, gateway_merchant_id, created_by, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13);

-- WalletsRepository.insertActive
INSERT INTO wallet_merchant_keys (tenant_id, wallet, id, status, slot, private_key, public_key,
             gateway_merchant_id, created_by, created_at)
      SELECT $1, $2, $3, 'active', free.slot, $4, $5, $6, $7, $8
        FROM (SELECT (SELECT min(s) FROM generate_series(1, 5) AS s
  WHERE NOT EXISTS (SELECT 1 FROM wallet_merchant_keys k
                     WHERE k.tenant_id = $1 AND k.wallet = $2 AND k.slot = s)) AS slot) free
       WHERE free.slot IS NOT NULL
      ON CONFLICT DO NOTHING
      RETURNING id;

-- WalletsRepository.activate
UPDATE wallet_merchant_keys
         SET status = 'active', slot = coalesce(slot, (SELECT min(s) FROM generate_series(1, 5) AS s
  WHERE NOT EXISTS (SELECT 1 FROM wallet_merchant_keys k
                     WHERE k.tenant_id = $1 AND k.wallet = $2 AND k.slot = s))),
             certificate = $4, merchant_identifier = $5, not_after = $6
       WHERE tenant_id = $1 AND wallet = $2 AND id = $3 AND coalesce(slot, (SELECT min(s) FROM generate_series(1, 5) AS s
  WHERE NOT EXISTS (SELECT 1 FROM wallet_merchant_keys k
                     WHERE k.tenant_id = $1 AND k.wallet = $2 AND k.slot = s))) IS NOT NULL
       RETURNING tenant_id AS "tenantId", id, wallet, status, slot, private_key AS "privateKey", public_key AS "publicKey", certificate, merchant_identifier AS "merchantIdentifier", not_after AS "notAfter", gateway_merchant_id AS "gatewayMerchantId", created_by AS "createdBy", created_at AS "createdAt";

-- WalletsRepository.findLocked
SELECT tenant_id AS "tenantId", id, wallet, status, slot, private_key AS "privateKey", public_key AS "publicKey", certificate, merchant_identifier AS "merchantIdentifier", not_after AS "notAfter", gateway_merchant_id AS "gatewayMerchantId", created_by AS "createdBy", created_at AS "createdAt" FROM wallet_merchant_keys
  WHERE tenant_id = $1 AND wallet = $2 AND id = $3 FOR UPDATE;

-- WalletsRepository.findOne
SELECT tenant_id AS "tenantId", id, wallet, status, slot, private_key AS "privateKey", public_key AS "publicKey", certificate, merchant_identifier AS "merchantIdentifier", not_after AS "notAfter", gateway_merchant_id AS "gatewayMerchantId", created_by AS "createdBy", created_at AS "createdAt"
  FROM wallet_merchant_keys
  WHERE tenant_id = $1 AND wallet = $2 AND id = $3;

-- WalletsRepository.page
SELECT count(*)::int AS total FROM wallet_merchant_keys WHERE tenant_id = $1 AND wallet = $2;

-- WalletsRepository.page
SELECT tenant_id AS "tenantId", id, wallet, status, slot, private_key AS "privateKey", public_key AS "publicKey", certificate, merchant_identifier AS "merchantIdentifier", not_after AS "notAfter", gateway_merchant_id AS "gatewayMerchantId", created_by AS "createdBy", created_at AS "createdAt" FROM wallet_merchant_keys WHERE tenant_id = $1 AND wallet = $2
  ORDER BY created_at, id OFFSET $3 LIMIT $4;

-- WalletsRepository.activeKeys
SELECT tenant_id AS "tenantId", id, wallet, status, slot, private_key AS "privateKey", public_key AS "publicKey", certificate, merchant_identifier AS "merchantIdentifier", not_after AS "notAfter", gateway_merchant_id AS "gatewayMerchantId", created_by AS "createdBy", created_at AS "createdAt" FROM wallet_merchant_keys
  WHERE tenant_id = $1 AND wallet = $2 AND status = 'active' ORDER BY slot;

-- WalletsRepository.delete
DELETE FROM wallet_merchant_keys WHERE tenant_id = $1 AND wallet = $2 AND id = $3 RETURNING id;

-- WalletsRepository.recordTransaction
WITH wallet_replay_0 AS (
                 INSERT INTO wallet_replays (tenant_id, wallet, digest, token_id, created_at, expires_at)
                 VALUES ($1::uuid, $2::text, $3::bytea,
                         $4::text, $5::timestamptz,
                         $6::timestamptz)
                 ON CONFLICT DO NOTHING
                 RETURNING 1)
  SELECT (CASE WHEN NOT EXISTS (SELECT 1 FROM wallet_replay_0) THEN refuse_write($7::text) END) AS r0;

-- WalletsRepository.purgeReplays
DELETE FROM wallet_replays WHERE expires_at < $1;
