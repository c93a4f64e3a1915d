-- ConnectionsRepository.hasTransactions
SELECT 1 FROM transactions WHERE tenant_id = $1 AND connection_id = $2 LIMIT 1;
