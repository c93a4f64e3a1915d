-- RefundsRepository.pendingTotal
SELECT coalesce(sum(amount), 0) AS pending FROM refunds
  WHERE tenant_id = $1 AND transaction_id = $2 AND status = 'processing';

-- RefundsRepository.insert
INSERT INTO refunds (id, tenant_id, transaction_id, amount, currency, status, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, 'processing', $6, $6)
  RETURNING id, tenant_id, transaction_id, amount, currency, status, created_at;

-- RefundsRepository.settle
UPDATE refunds SET status = $3, connection_refund_id = $4, updated_at = $5
  WHERE tenant_id = $1 AND id = $2 AND status = 'processing' RETURNING id, tenant_id, transaction_id, amount, currency, status, created_at;

-- RefundsRepository.list
SELECT id, tenant_id, transaction_id, amount, currency, status, created_at FROM refunds WHERE tenant_id = $1 AND transaction_id = $2
  ORDER BY created_at, id LIMIT $3 OFFSET $4;

-- RefundsRepository.list
SELECT count(*)::int AS n FROM refunds WHERE tenant_id = $1 AND transaction_id = $2;

-- RefundsRepository.findStuck
SELECT r.id, r.tenant_id, r.transaction_id, r.amount, r.currency, r.status, r.created_at FROM refunds r
  JOIN transactions t ON t.tenant_id = r.tenant_id AND t.id = r.transaction_id
  JOIN connections c ON c.tenant_id = t.tenant_id AND c.id = t.connection_id
  WHERE ($5::uuid IS NULL OR r.tenant_id = $5)
    AND r.status = 'processing' AND r.updated_at <= $1
    AND NOT (c.environment <> 'sandbox' AND c.formula_id = ANY($3) AND r.created_at > $4)
  ORDER BY r.updated_at LIMIT $2;

-- RefundsRepository.find
SELECT id, tenant_id, transaction_id, amount, currency, status, created_at
  FROM refunds
  WHERE tenant_id = $1 AND transaction_id = $2 AND id = $3;
