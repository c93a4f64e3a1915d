-- ConnectionTokensRepository.upsert
INSERT INTO buyer_connection_tokens (tenant_id, token_id, connection_id, sealed_token, token_last4, connection_customer, network_transaction_id, position, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (tenant_id, token_id, connection_id) DO UPDATE SET
  sealed_token = excluded.sealed_token, token_last4 = excluded.token_last4,
  connection_customer = excluded.connection_customer,
  network_transaction_id = excluded.network_transaction_id, position = excluded.position;

-- ConnectionTokensRepository.keepOnly
WITH gone AS (DELETE FROM buyer_connection_tokens
     WHERE tenant_id = $1 AND token_id = $2 AND NOT (connection_id = ANY($3::uuid[])) RETURNING connection_id)
  SELECT count(*)::int AS n FROM gone;

-- ConnectionTokensRepository.shown
SELECT tenant_id, token_id, connection_id, token_last4, connection_customer, network_transaction_id, position, created_at
  FROM buyer_connection_tokens
  WHERE tenant_id = $1 AND token_id = ANY($2::varchar[])
  ORDER BY token_id, position, connection_id;

-- ConnectionTokensRepository.forCard
SELECT tenant_id, token_id, connection_id, sealed_token, token_last4, connection_customer, network_transaction_id, position, created_at
  FROM buyer_connection_tokens
  WHERE tenant_id = $1 AND token_id = $2
  ORDER BY token_id, position, connection_id;

-- ConnectionTokensRepository.connections
SELECT id, formula_id
  FROM connections
  WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND deleted_at IS NULL;
