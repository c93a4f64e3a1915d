-- BuyersRepository.insert
INSERT INTO buyers (tenant_id, id, external_identifier, display_name, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $5)
  ON CONFLICT ON CONSTRAINT buyers_external_identifier_key DO NOTHING RETURNING tenant_id, id, external_identifier, display_name, created_at, updated_at;

-- BuyersRepository.find
SELECT tenant_id, id, external_identifier, display_name, created_at, updated_at
  FROM buyers
  WHERE tenant_id = $1 AND id = $2;

-- BuyersRepository.page
SELECT tenant_id, id, external_identifier, display_name, created_at, updated_at FROM buyers WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC
  LIMIT $2 OFFSET $3;

-- BuyersRepository.page
SELECT count(*)::int AS n FROM buyers WHERE tenant_id = $1;

-- BuyersRepository.page (filtered)
SELECT tenant_id, id, external_identifier, display_name, created_at, updated_at FROM buyers WHERE tenant_id = $1 AND external_identifier = $2 AND (lower(display_name) LIKE $3 OR lower(external_identifier) LIKE $3) ORDER BY created_at DESC, id DESC
  LIMIT $4 OFFSET $5;

-- BuyersRepository.page (filtered)
SELECT count(*)::int AS n
  FROM buyers
  WHERE tenant_id = $1 AND external_identifier = $2 AND (lower(display_name) LIKE $3 OR lower(external_identifier) LIKE $3);

-- BuyersRepository.update
WITH written AS (UPDATE buyers SET updated_at = $1, display_name = $2 WHERE tenant_id = $3 AND id = $4
  RETURNING tenant_id, id, external_identifier, display_name, created_at, updated_at) SELECT * FROM written;

-- BuyersRepository.delete
WITH written AS (DELETE
  FROM buyers
  WHERE tenant_id = $1 AND id = $2
  RETURNING tenant_id, id, external_identifier, display_name, created_at, updated_at) SELECT *
  FROM written;

-- BuyersRepository.attach
INSERT INTO buyer_payment_methods (tenant_id, token_id, buyer_id, fingerprint, created_at)
  SELECT b.tenant_id, $3, b.id, $4, $5 FROM buyers b WHERE b.tenant_id = $1 AND b.id = $2
  ON CONFLICT DO NOTHING RETURNING token_id;

-- BuyersRepository.ensureByExternalIds
WITH made AS (
    INSERT INTO buyers (tenant_id, id, external_identifier, display_name, created_at, updated_at)
    SELECT $1, gen_random_uuid(), e, NULL, $3, $3 FROM unnest($2::varchar[]) AS e
    ON CONFLICT ON CONSTRAINT buyers_external_identifier_key DO NOTHING
    RETURNING id, external_identifier)
  SELECT id, external_identifier FROM made
  UNION ALL
  SELECT id, external_identifier FROM buyers WHERE tenant_id = $1 AND external_identifier = ANY($2::varchar[]);

-- BuyersRepository.attachMany
WITH stored AS (
    INSERT INTO buyer_payment_methods (tenant_id, token_id, buyer_id, fingerprint, created_at)
    SELECT $1, c.token_id, c.buyer_id, c.fingerprint, $3
      FROM unnest($2::varchar[], $4::uuid[], $5::varchar[]) AS c(token_id, buyer_id, fingerprint)
    ON CONFLICT DO NOTHING RETURNING token_id, buyer_id)
  SELECT token_id, buyer_id FROM stored
  UNION ALL
  SELECT token_id, buyer_id FROM buyer_payment_methods WHERE tenant_id = $1 AND token_id = ANY($2::varchar[]);

-- BuyersRepository.dropExpired
WITH written AS (DELETE FROM buyer_payment_methods m USING tokens t
  WHERE m.tenant_id = $1 AND m.buyer_id = $2 AND m.fingerprint = $3
    AND t.tenant_id = m.tenant_id AND t.id = m.token_id AND t.expires_at <= $4 RETURNING m.token_id) SELECT * FROM written;

-- BuyersRepository.findStored
SELECT tenant_id, token_id, buyer_id, fingerprint, created_at, last_used_at
  FROM buyer_payment_methods
  WHERE tenant_id = $1 AND token_id = $2;

-- BuyersRepository.findMethod
SELECT m.tenant_id, m.token_id, m.buyer_id, m.fingerprint, m.created_at, m.last_used_at, t.card_brand, t.mask
  FROM buyer_payment_methods m JOIN tokens t ON t.tenant_id = m.tenant_id AND t.id = m.token_id WHERE m.tenant_id = $1 AND m.buyer_id = $2 AND (t.expires_at IS NULL OR t.expires_at > $3)
          AND (m.token_id = $4 OR m.fingerprint = $5)
        ORDER BY m.token_id = $4 DESC LIMIT 1;

-- BuyersRepository.listMethods
SELECT m.tenant_id, m.token_id, m.buyer_id, m.fingerprint, m.created_at, m.last_used_at, t.card_brand, t.mask
  FROM buyer_payment_methods m JOIN tokens t ON t.tenant_id = m.tenant_id AND t.id = m.token_id WHERE m.tenant_id = $1 AND m.buyer_id = $2 AND (t.expires_at IS NULL OR t.expires_at > $3) ORDER BY coalesce(m.last_used_at, m.created_at) DESC, m.token_id;

-- BuyersRepository.detach
WITH written AS (DELETE
  FROM buyer_payment_methods
  WHERE tenant_id = $1 AND buyer_id = $2 AND token_id = $3
  RETURNING token_id) SELECT *
  FROM written;

-- BuyersRepository.used
WITH used_0 AS (UPDATE buyer_payment_methods m SET last_used_at = $4::timestamptz FROM tokens t
              WHERE t.tenant_id = $1::uuid AND t.id = $2::varchar AND m.tenant_id = $1::uuid
                AND (m.token_id = $2::varchar OR (m.buyer_id = $3::uuid AND m.fingerprint = t.fingerprint))),
  stored_0 AS (INSERT INTO buyer_payment_methods (tenant_id, token_id, buyer_id, fingerprint, created_at, last_used_at)
             SELECT t.tenant_id, t.id, b.id, t.fingerprint, $4::timestamptz, $4::timestamptz
               FROM tokens t JOIN buyers b ON b.tenant_id = t.tenant_id AND b.id = $3::uuid
              WHERE t.tenant_id = $1::uuid AND t.id = $2::varchar
             ON CONFLICT DO NOTHING RETURNING token_id)
  SELECT EXISTS (SELECT 1 FROM stored_0) AS r0;
