-- AdvisoryLocksRepository.whileLocked
SELECT pg_advisory_lock($1);

-- AdvisoryLocksRepository.whileLocked
SELECT pg_advisory_unlock($1);
