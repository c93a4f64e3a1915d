-- FlowRulesRepository.listFlow
SELECT tenant_id, id, flow, action, description, position, conditions, outcome, created_at, updated_at
  FROM flow_rules
  WHERE tenant_id = $1 AND flow = $2
  ORDER BY action, position;

-- FlowRulesRepository.list
SELECT tenant_id, id, flow, action, description, position, conditions, outcome, created_at, updated_at
  FROM flow_rules
  WHERE tenant_id = $1 AND flow = $2 AND action = $3
  ORDER BY position;

-- FlowRulesRepository.find
SELECT tenant_id, id, flow, action, description, position, conditions, outcome, created_at, updated_at
  FROM flow_rules
  WHERE tenant_id = $1 AND flow = $2 AND action = $3 AND id = $4;

-- FlowRulesRepository.lock
SELECT pg_advisory_xact_lock(72203, hashtext($1::text || ':' || $2::text));

-- FlowRulesRepository.lock
SELECT count(*)::int AS n, max(position) FILTER (WHERE id = $4::uuid) AS position
  FROM flow_rules WHERE tenant_id = $1 AND flow = $2 AND action = $3;

-- FlowRulesRepository.insert
UPDATE flow_rules SET position = position + 1
  WHERE tenant_id = $1 AND flow = $2 AND action = $3 AND position >= $4;

-- FlowRulesRepository.insert
INSERT INTO flow_rules (tenant_id, id, flow, action, description, position, conditions, outcome, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING tenant_id, id, flow, action, description, position, conditions, outcome, created_at, updated_at;

-- FlowRulesRepository.update
UPDATE flow_rules SET position = position + CASE WHEN $4::int < $5::int THEN -1 ELSE 1 END
  WHERE tenant_id = $1 AND flow = $2 AND action = $3 AND id <> $6
    AND position BETWEEN least($4::int, $5::int) AND greatest($4::int, $5::int);

-- FlowRulesRepository.update
UPDATE flow_rules SET description = $4, position = $5, conditions = $6, outcome = $7, updated_at = $8
  WHERE tenant_id = $1 AND flow = $2 AND id = $3 RETURNING tenant_id, id, flow, action, description, position, conditions, outcome, created_at, updated_at;

-- FlowRulesRepository.delete
DELETE FROM flow_rules WHERE tenant_id = $1 AND flow = $2 AND id = $3;

-- FlowRulesRepository.delete
UPDATE flow_rules SET position = position - 1
  WHERE tenant_id = $1 AND flow = $2 AND action = $3 AND position > $4;
