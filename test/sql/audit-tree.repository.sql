-- AuditTreeRepository.cursor
SELECT written, pos FROM audit_tree_cursor;

-- AuditTreeRepository.horizon
WITH next AS (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS x),
  running AS (
    SELECT backend_xid::text::bigint AS xid FROM pg_stat_activity
     WHERE datname = current_database() AND backend_xid IS NOT NULL
    UNION ALL
    SELECT transaction::text::bigint FROM pg_prepared_xacts WHERE database = current_database()
  )
  -- A running transaction's 32-bit id, as a 64-bit id of pg_current_xact_id(): the one nearest the next
  -- id (live ids are never 2^31 apart). One that started after this statement's snapshot is above it.
  SELECT least(next.x, min(next.x + d.d))::text AS horizon
    FROM next
    LEFT JOIN running AS r ON true
    LEFT JOIN LATERAL (SELECT r.xid - (next.x & 4294967295) AS raw) AS raw ON true
    LEFT JOIN LATERAL (SELECT CASE WHEN raw.raw > 2147483648 THEN raw.raw - 4294967296
                                   WHEN raw.raw < -2147483648 THEN raw.raw + 4294967296
                                   ELSE raw.raw END AS d) AS d ON true
   GROUP BY next.x;

-- AuditTreeRepository.rowsToAppend
SELECT a.id, a.tenant_id, a.actor_id, a.actor_type, a.entity_type, a.entity_id, a.operation, a.message, a.created_at, a.written, a.pos, a.seq FROM audit_logs AS a
  WHERE (a.written, a.pos) > ($1::bigint, $2::bigint) AND a.written < $3::bigint
  ORDER BY a.written, a.pos
  LIMIT $4;

-- AuditTreeRepository.trees
SELECT tenant_id, size, retained_from, checkpoint_size, checkpoint_at
  FROM audit_trees
  WHERE tenant_id = ANY($1::uuid[]);

-- AuditTreeRepository.tree
SELECT tenant_id, size, retained_from, checkpoint_size, checkpoint_at
  FROM audit_trees
  WHERE tenant_id = $1;

-- AuditTreeRepository.allTrees
SELECT tenant_id, size, retained_from, checkpoint_size, checkpoint_at
  FROM audit_trees
  ORDER BY tenant_id;

-- AuditTreeRepository.tiles (tiles)
SELECT level, idx, hashes FROM audit_tree_tiles
  WHERE tenant_id = $1 AND (level, idx) IN (SELECT * FROM unnest($2::int[], $3::bigint[]));

-- AuditTreeRepository.tiles (tilesInChange)
SELECT level, idx, hashes FROM audit_tree_tiles
  WHERE tenant_id = $1 AND (level, idx) IN (SELECT * FROM unnest($2::int[], $3::bigint[]));

-- AuditTreeRepository.leafTiles
SELECT level, idx, hashes FROM audit_tree_tiles
  WHERE tenant_id = $1 AND level = 0 AND idx >= $2 ORDER BY idx LIMIT $3;

-- AuditTreeRepository.append
INSERT INTO audit_leaves (tenant_id, row_id, leaf_index)
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bigint[]);

-- AuditTreeRepository.append
INSERT INTO audit_tree_tiles (tenant_id, level, idx, hashes)
  SELECT * FROM unnest($1::uuid[], $2::int[], $3::bigint[], $4::bytea[])
  ON CONFLICT (tenant_id, level, idx) DO UPDATE SET hashes = EXCLUDED.hashes;

-- AuditTreeRepository.append
INSERT INTO audit_trees (tenant_id, size)
  SELECT * FROM unnest($1::uuid[], $2::bigint[])
  ON CONFLICT (tenant_id) DO UPDATE SET size = EXCLUDED.size;

-- AuditTreeRepository.append
UPDATE audit_tree_cursor SET written = $1, pos = $2;

-- AuditTreeRepository.dueForCheckpoint
SELECT tenant_id, size, retained_from, checkpoint_size, checkpoint_at FROM audit_trees
  WHERE size > checkpoint_size AND (checkpoint_at IS NULL OR checkpoint_at <= $1);

-- AuditTreeRepository.addCheckpoint
INSERT INTO audit_checkpoints (tenant_id, tree_size, root_hash, key_id, note, created_at)
  VALUES ($1, $2, $3, $4, $5, $6);

-- AuditTreeRepository.addCheckpoint
UPDATE audit_trees SET checkpoint_size = $2, checkpoint_at = $3 WHERE tenant_id = $1;

-- AuditTreeRepository.checkpoint (latest)
SELECT tenant_id, tree_size, root_hash, key_id, note, created_at
  FROM audit_checkpoints
  WHERE tenant_id = $1
  ORDER BY tree_size DESC
  LIMIT 1;

-- AuditTreeRepository.checkpoint (ofSize)
SELECT tenant_id, tree_size, root_hash, key_id, note, created_at
  FROM audit_checkpoints
  WHERE tenant_id = $1 AND tree_size = $2;

-- AuditTreeRepository.checkpoints
SELECT tenant_id, tree_size, root_hash, key_id, note, created_at
  FROM audit_checkpoints
  WHERE tenant_id = $1
  ORDER BY tree_size;

-- AuditTreeRepository.rowWithLeaf
SELECT a.id, a.tenant_id, a.actor_id, a.actor_type, a.entity_type, a.entity_id, a.operation, a.message, a.created_at, a.written, a.pos, a.seq, l.leaf_index, c.tree_size AS checkpoint_size FROM audit_logs AS a
   LEFT JOIN audit_leaves AS l ON l.tenant_id = a.tenant_id AND l.row_id = a.id
   LEFT JOIN LATERAL (SELECT tree_size FROM audit_checkpoints
                       WHERE tenant_id = a.tenant_id ORDER BY tree_size DESC LIMIT 1) AS c ON true
  WHERE a.tenant_id = $1 AND a.id = $2;

-- AuditTreeRepository.appendedRows (appendedRows)
SELECT a.id, a.tenant_id, a.actor_id, a.actor_type, a.entity_type, a.entity_id, a.operation, a.message, a.created_at, a.written, a.pos, a.seq FROM audit_logs AS a
  WHERE (a.written, a.pos) > ($1::bigint, $2::bigint) AND (a.written, a.pos) <= ($3::bigint, $4::bigint)
  ORDER BY a.written, a.pos
  LIMIT $5;

-- AuditTreeRepository.appendedRows (appendedRowsOfTenant)
SELECT a.id, a.tenant_id, a.actor_id, a.actor_type, a.entity_type, a.entity_id, a.operation, a.message, a.created_at, a.written, a.pos, a.seq FROM audit_logs AS a
  WHERE (a.written, a.pos) > ($1::bigint, $2::bigint) AND (a.written, a.pos) <= ($3::bigint, $4::bigint)
    AND a.tenant_id = $6
  ORDER BY a.written, a.pos
  LIMIT $5;

-- AuditTreeRepository.appendedUpTo
SELECT written, pos FROM audit_tree_cursor;

-- AuditTreeRepository.leaf (leafOfRow)
SELECT row_id, leaf_index FROM audit_leaves WHERE tenant_id = $1 AND row_id = $2 LIMIT 1;

-- AuditTreeRepository.leaf (rowOfLeaf)
SELECT row_id, leaf_index FROM audit_leaves WHERE tenant_id = $1 AND leaf_index = $2 LIMIT 1;

-- AuditTreeRepository.deleteRetained
WITH cut AS (
    SELECT written, pos FROM audit_logs WHERE created_at >= $1 ORDER BY written, pos LIMIT 1
  ), gone AS (
    DELETE FROM audit_logs AS a
     USING audit_tree_cursor AS c
     WHERE (a.written, a.pos) <= (c.written, c.pos)
       AND (NOT EXISTS (SELECT 1 FROM cut) OR (a.written, a.pos) < (SELECT written, pos FROM cut))
    RETURNING a.tenant_id, a.id
  ), leaves AS (
    DELETE FROM audit_leaves AS l USING gone AS g
     WHERE l.tenant_id = g.tenant_id AND l.row_id = g.id
    RETURNING l.tenant_id, l.leaf_index
  ), moved AS (
    UPDATE audit_trees AS t SET retained_from = greatest(t.retained_from, m.next)
      FROM (SELECT tenant_id, max(leaf_index) + 1 AS next FROM leaves GROUP BY tenant_id) AS m
     WHERE t.tenant_id = m.tenant_id
  )
  SELECT count(*)::int AS n FROM gone;
