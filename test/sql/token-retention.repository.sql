-- TokenRetentionRepository.deleteExpiredTokens
DELETE FROM tokens WHERE expires_at <= $1;

-- TokenRetentionRepository.deleteExpiredCvcs
DELETE FROM token_cvcs WHERE expires_at <= $1;
