-- SessionsRepository.insert
INSERT INTO sessions (id, tenant_id, application_id, key_hash, nonce_hash, expires_at, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7);

-- SessionsRepository.lockPendingByNonce
SELECT id, expires_at, created_at FROM sessions
  WHERE nonce_hash = $1 AND tenant_id = $2 AND expires_at > $3 FOR UPDATE;

-- SessionsRepository.authorize
UPDATE sessions
    SET nonce_hash = NULL, permissions = $3, rules = $4, authorized_by = $5, authorized_at = $6,
        expires_at = $7
  WHERE tenant_id = $1 AND id = $2;

-- SessionsRepository.findByKeyHash
SELECT s.id, s.tenant_id, s.application_id, s.key_hash, s.permissions, s.rules, s.authorized_at, s.expires_at, a.permissions AS holder_permissions, a.rules AS holder_rules
   FROM sessions s LEFT JOIN applications a ON a.id = s.authorized_by AND a.tenant_id = s.tenant_id
  WHERE s.key_hash = $1;

-- SessionsRepository.deleteExpired
DELETE FROM sessions WHERE expires_at <= $1;
