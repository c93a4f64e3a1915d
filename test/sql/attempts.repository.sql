-- AttemptsRepository.begin
WITH attempt_0 AS (INSERT INTO transaction_attempts
        (tenant_id, id, transaction_id, number, connection_id, status, created_at, updated_at)
      SELECT $1::uuid, $2::uuid, $3::uuid, $4::int, $5::uuid, 'processing', $6::timestamptz, $6::timestamptz)
  SELECT NULL AS r0;

-- AttemptsRepository.settle
WITH attempt_0 AS (UPDATE transaction_attempts
              SET status = $1, error_code = $2,
                  auth_response_code = $3,
                  connection_transaction_id = $4,
                  updated_at = $5::timestamptz
            WHERE tenant_id = $6::uuid AND transaction_id = $7::uuid
              AND number = $8::int AND status IN ('processing', 'buyer_approval_pending'))
  SELECT NULL AS r0;

-- AttemptsRepository.follow
WITH attempt_0 AS (UPDATE transaction_attempts
              SET status = $1, error_code = $2,
                  auth_response_code = $3,
                  connection_transaction_id = $4,
                  updated_at = $5::timestamptz
            WHERE tenant_id = $6::uuid AND transaction_id = $7::uuid
              AND number = $8::int AND status IN ('processing', 'buyer_approval_pending'))
  SELECT NULL AS r0;

-- AttemptsRepository.list
SELECT a.tenant_id, a.id, a.transaction_id, a.number, a.connection_id, a.status, a.error_code, a.auth_response_code, a.connection_transaction_id, a.created_at, a.updated_at, c.formula_id AS c_formula_id, c.method AS c_method, c.display_name AS c_display_name
   FROM transaction_attempts a JOIN connections c ON c.tenant_id = a.tenant_id AND c.id = a.connection_id
  WHERE a.tenant_id = $1 AND a.transaction_id = $2 ORDER BY a.number;
