-- RelayRefundsRepository.insert
INSERT INTO relay_refunds (tenant_id, id, connection_id, vendor_payment_id, amount, currency, reason, status, created_at, updated_at)
  VALUES ($2, $3, $4, $5, $6, $7, $8, 'processing', $1, $1)
  RETURNING tenant_id, id, connection_id, vendor_payment_id, amount, currency, reason, status, vendor_refund_id, error_code, created_at, updated_at;

-- RelayRefundsRepository.settle
UPDATE relay_refunds SET status = $3, vendor_refund_id = coalesce($4, vendor_refund_id),
   error_code = $5, updated_at = $6
  WHERE tenant_id = $1 AND id = $2 AND status = 'processing' RETURNING tenant_id, id, connection_id, vendor_payment_id, amount, currency, reason, status, vendor_refund_id, error_code, created_at, updated_at;

-- RelayRefundsRepository.find
SELECT tenant_id, id, connection_id, vendor_payment_id, amount, currency, reason, status, vendor_refund_id, error_code, created_at, updated_at
  FROM relay_refunds
  WHERE tenant_id = $1 AND id = $2;

-- RelayRefundsRepository.findForNotification
SELECT tenant_id, id, connection_id, vendor_payment_id, amount, currency, reason, status, vendor_refund_id, error_code, created_at, updated_at
  FROM relay_refunds
  WHERE id = $1;

-- RelayRefundsRepository.list
SELECT tenant_id, id, connection_id, vendor_payment_id, amount, currency, reason, status, vendor_refund_id, error_code, created_at, updated_at FROM relay_refunds WHERE tenant_id = $1
  ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3;

-- RelayRefundsRepository.list
SELECT count(*)::int AS n FROM relay_refunds WHERE tenant_id = $1;

-- RelayRefundsRepository.findStuck
SELECT r.tenant_id, r.id, r.connection_id, r.vendor_payment_id, r.amount, r.currency, r.reason, r.status, r.vendor_refund_id, r.error_code, r.created_at, r.updated_at FROM relay_refunds r
  JOIN connections c ON c.tenant_id = r.tenant_id AND c.id = r.connection_id
  WHERE ($5::uuid IS NULL OR r.tenant_id = $5)
    AND r.status = 'processing' AND r.updated_at <= $1
    AND NOT (c.environment <> 'sandbox' AND c.formula_id = ANY($3) AND r.created_at > $4)
  ORDER BY r.updated_at LIMIT $2;
