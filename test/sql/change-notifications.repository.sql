-- ChangeNotificationsRepository.listen
LISTEN vault_changes;
