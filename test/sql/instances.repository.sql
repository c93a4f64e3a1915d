-- InstancesRepository.beat
INSERT INTO instances (id, hostname, pid, key_versions) VALUES ($1, $2, $3, $4)
  ON CONFLICT (id) DO UPDATE SET seen_at = now(), key_versions = EXCLUDED.key_versions;

-- InstancesRepository.remove
DELETE FROM instances WHERE id = $1;

-- InstancesRepository.live
SELECT id, hostname, pid, key_versions FROM instances
  WHERE seen_at > now() - make_interval(secs => $1) ORDER BY started_at;

-- InstancesRepository.prune
DELETE FROM instances WHERE seen_at < now() - make_interval(secs => $1);
