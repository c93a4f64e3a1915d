-- JobRunsRepository.whileLocked (locked)
SELECT pg_try_advisory_xact_lock($1) AS locked;

-- JobRunsRepository.whileLocked (held elsewhere)
SELECT pg_try_advisory_xact_lock($1) AS locked;

-- JobRunsRepository.tryLock
SELECT pg_try_advisory_xact_lock($1) AS locked;

-- JobRunsRepository.claim
INSERT INTO job_runs (job, tick_start, instance_id, ran_at) VALUES ($1, $2, $3, $4)
  ON CONFLICT (job, tick_start) DO NOTHING RETURNING job;

-- JobRunsRepository.deleteRanBefore
DELETE FROM job_runs WHERE ran_at < $1;
