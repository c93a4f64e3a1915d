-- RateLimitsRepository.add
INSERT INTO rate_limits (key, window_start, hits) VALUES ($1, $2, $3)
  ON CONFLICT (key, window_start) DO UPDATE SET hits = rate_limits.hits + EXCLUDED.hits
  RETURNING hits;

-- RateLimitsRepository.deleteStartedBefore
DELETE FROM rate_limits WHERE window_start < $1;
