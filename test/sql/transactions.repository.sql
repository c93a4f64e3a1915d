-- TransactionsRepository.insert
WITH written AS (INSERT INTO transactions (id, tenant_id, connection_id, token_id, status, pending_operation, pending_since, intent, amount, currency, country, external_identifier, metadata, payment_source, merchant_initiated, is_subsequent_payment, previous_scheme_transaction_id, three_d_session_id, payment_method, buyer_id, buyer_external_identifier, buyer_display_name, store_payment_method, created_by, created_at, updated_at) VALUES ($1, $2, $3, $4, 'processing', 'authorize', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $5, $5) RETURNING *) SELECT t.*, c.formula_id AS c_formula_id, c.method AS c_method, c.display_name AS c_display_name
  FROM written t LEFT JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id;

-- TransactionsRepository.insert (insert with its first attempt)
WITH written AS (INSERT INTO transactions (id, tenant_id, connection_id, token_id, status, pending_operation, pending_since, intent, amount, currency, country, external_identifier, metadata, payment_source, merchant_initiated, is_subsequent_payment, previous_scheme_transaction_id, three_d_session_id, payment_method, buyer_id, buyer_external_identifier, buyer_display_name, store_payment_method, created_by, created_at, updated_at) VALUES ($1, $2, $3, $4, 'processing', 'authorize', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $5, $5) RETURNING *),
          first_attempt AS (INSERT INTO transaction_attempts
      (tenant_id, id, transaction_id, number, connection_id, status, created_at, updated_at)
    SELECT tenant_id, $23::uuid, id, 1, connection_id, 'processing', created_at, created_at FROM written)
        SELECT t.*, c.formula_id AS c_formula_id, c.method AS c_method, c.display_name AS c_display_name
  FROM written t LEFT JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id;

-- TransactionsRepository.find
SELECT t.*, c.formula_id AS c_formula_id, c.method AS c_method, c.display_name AS c_display_name
  FROM transactions t LEFT JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id WHERE t.tenant_id = $1 AND t.id = $2;

-- TransactionsRepository.lock
SELECT t.*, c.formula_id AS c_formula_id, c.method AS c_method, c.display_name AS c_display_name
  FROM transactions t LEFT JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id WHERE t.tenant_id = $1 AND t.id = $2 FOR UPDATE OF t;

-- TransactionsRepository.findByApprovalDigest
SELECT t.*, c.formula_id AS c_formula_id, c.method AS c_method, c.display_name AS c_display_name
  FROM transactions t LEFT JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id WHERE t.approval_token_hash = $1;

-- TransactionsRepository.findAwaitingBuyer
SELECT t.*, c.formula_id AS c_formula_id, c.method AS c_method, c.display_name AS c_display_name
  FROM transactions t LEFT JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id WHERE t.id = $1 AND t.status = 'buyer_approval_pending';

-- TransactionsRepository.findForNotification
SELECT t.*, c.formula_id AS c_formula_id, c.method AS c_method, c.display_name AS c_display_name
  FROM transactions t LEFT JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id WHERE t.id = $1;

-- TransactionsRepository.list (list)
SELECT t.*, c.formula_id AS c_formula_id, c.method AS c_method, c.display_name AS c_display_name
  FROM transactions t LEFT JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id WHERE t.tenant_id = $1 ORDER BY t.created_at DESC, t.id DESC LIMIT $2 OFFSET $3;

-- TransactionsRepository.list (list)
SELECT count(*)::int AS n FROM transactions t WHERE t.tenant_id = $1;

-- TransactionsRepository.list (list filtered)
SELECT t.*, c.formula_id AS c_formula_id, c.method AS c_method, c.display_name AS c_display_name
  FROM transactions t LEFT JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id WHERE t.tenant_id = $1 AND t.status = $2 AND t.connection_id = $3 AND t.external_identifier = $4 ORDER BY t.created_at DESC, t.id DESC LIMIT $5 OFFSET $6;

-- TransactionsRepository.list (list filtered)
SELECT count(*)::int AS n
  FROM transactions t
  WHERE t.tenant_id = $1 AND t.status = $2 AND t.connection_id = $3 AND t.external_identifier = $4;

-- TransactionsRepository.apply (apply)
WITH written AS (UPDATE transactions SET status = $1, pending_operation = $2, pending_since = $3, pending_amount = $4, previous_status = $5, updated_at = $6
        WHERE tenant_id = $7 AND id = $8 AND status = $9 RETURNING *) SELECT t.*, c.formula_id AS c_formula_id, c.method AS c_method, c.display_name AS c_display_name
  FROM written t LEFT JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id;

-- TransactionsRepository.apply (apply issuing an approval)
WITH written AS (UPDATE transactions SET status = $1, pending_operation = $2, pending_since = $3, pending_amount = $4, previous_status = $5, connection_transaction_id = $6, approval_token_hash = $7, approval_token = $8, approval_expires_at = $9, vendor_action = $10, updated_at = $11
        WHERE tenant_id = $12 AND id = $13 AND status = $14 RETURNING *) SELECT t.*, c.formula_id AS c_formula_id, c.method AS c_method, c.display_name AS c_display_name
  FROM written t LEFT JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id;

-- TransactionsRepository.nextAttempt
WITH written AS (UPDATE transactions SET connection_id = $4, attempt = attempt + 1, pending_since = $5, updated_at = $5
        WHERE tenant_id = $1 AND id = $2 AND attempt = $3 AND status = 'processing' AND pending_operation = 'authorize' RETURNING *) SELECT t.*, c.formula_id AS c_formula_id, c.method AS c_method, c.display_name AS c_display_name
  FROM written t LEFT JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id;

-- TransactionsRepository.addRefunded
WITH written AS (UPDATE transactions SET refunded_amount = refunded_amount + $3, updated_at = $4 WHERE tenant_id = $1 AND id = $2 RETURNING *) SELECT t.*, c.formula_id AS c_formula_id, c.method AS c_method, c.display_name AS c_display_name
  FROM written t LEFT JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id;

-- TransactionsRepository.findUnsettled
SELECT t.*, c.formula_id AS c_formula_id, c.method AS c_method, c.display_name AS c_display_name
  FROM transactions t LEFT JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id
        WHERE ($6::uuid IS NULL OR t.tenant_id = $6)
          AND (((t.status IN ('capture_pending', 'authorization_void_pending'))
                OR (t.status = 'processing' AND t.pending_since <= $1))
               AND NOT (c.environment <> 'sandbox' AND c.formula_id = ANY($4)
                        AND COALESCE(t.pending_since, t.updated_at) > $5)
               OR (t.status = 'buyer_approval_pending' AND t.approval_expires_at <= $2))
        ORDER BY t.updated_at LIMIT $3;
