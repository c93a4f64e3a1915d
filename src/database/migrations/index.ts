import { Foundation1795000000000 } from './1795000000000-Foundation';
import { TokenVault1795000000001 } from './1795000000001-TokenVault';
import { Sessions1795000000002 } from './1795000000002-Sessions';
import { AuditLogs1795000000003 } from './1795000000003-AuditLogs';
import { Idempotency1795000000004 } from './1795000000004-Idempotency';
import { Orchestration1795000000005 } from './1795000000005-Orchestration';
import { AuditChain1795000000006 } from './1795000000006-AuditChain';
import { RateLimits1795000000007 } from './1795000000007-RateLimits';
import { JobRuns1795000000008 } from './1795000000008-JobRuns';
import { AbuseRules1795000000009 } from './1795000000009-AbuseRules';
import { TenantScopedKeys1795000000010 } from './1795000000010-TenantScopedKeys';
import { Proxies1795000000011 } from './1795000000011-Proxies';
import { Webhooks1795000000012 } from './1795000000012-Webhooks';
import { ConnectionEnvironments1795000000013 } from './1795000000013-ConnectionEnvironments';
import { VendorNotifications1795000000014 } from './1795000000014-VendorNotifications';
import { IdempotencyResources1795000000015 } from './1795000000015-IdempotencyResources';
import { StringTokenIds1795000000016 } from './1795000000016-StringTokenIds';
import { TokenMetadataIndex1795000000017 } from './1795000000017-TokenMetadataIndex';
import { CardEnrichments1795000000018 } from './1795000000018-CardEnrichments';
import { AuditTokenTypes1795000000019 } from './1795000000019-AuditTokenTypes';
import { ChangeNotifications1795000000020 } from './1795000000020-ChangeNotifications';
import { WriteRefusals1795000000021 } from './1795000000021-WriteRefusals';
import { CardEnumeration1795000000022 } from './1795000000022-CardEnumeration';
import { Instances1795000000024 } from './1795000000024-Instances';
import { EndedDeliveriesNotDue1795000000025 } from './1795000000025-EndedDeliveriesNotDue';
import { FingerprintGroups1795000000026 } from './1795000000026-FingerprintGroups';
import { AuditTree1795000000027 } from './1795000000027-AuditTree';
import { TokenChildrenCascade1795000000028 } from './1795000000028-TokenChildrenCascade';
import { FlowRules1795000000029 } from './1795000000029-FlowRules';
import { TransactionAttempts1795000000030 } from './1795000000030-TransactionAttempts';
import { Buyers1795000000031 } from './1795000000031-Buyers';
import { AllowedOrigins1795000000032 } from './1795000000032-AllowedOrigins';
import { CardEnumerationGroups1795000000033 } from './1795000000033-CardEnumerationGroups';
import { KeyCustody1795000000034 } from './1795000000034-KeyCustody';
import { TenantDataKeys1795000000035 } from './1795000000035-TenantDataKeys';
import { NetworkTokens1795000000036 } from './1795000000036-NetworkTokens';
import { Wallets1795000000037 } from './1795000000037-Wallets';
import { TokenImports1795000000038 } from './1795000000038-TokenImports';
import { ConnectionTokens1795000000039 } from './1795000000039-ConnectionTokens';
import { RelayRefunds1795000000040 } from './1795000000040-RelayRefunds';

/** Migrations in the order they apply; listed explicitly so that ts and compiled js load the same set. */
export const MIGRATIONS = [
  Foundation1795000000000,
  TokenVault1795000000001,
  Sessions1795000000002,
  AuditLogs1795000000003,
  Idempotency1795000000004,
  Orchestration1795000000005,
  AuditChain1795000000006,
  RateLimits1795000000007,
  JobRuns1795000000008,
  AbuseRules1795000000009,
  TenantScopedKeys1795000000010,
  Proxies1795000000011,
  Webhooks1795000000012,
  ConnectionEnvironments1795000000013,
  VendorNotifications1795000000014,
  IdempotencyResources1795000000015,
  StringTokenIds1795000000016,
  TokenMetadataIndex1795000000017,
  CardEnrichments1795000000018,
  AuditTokenTypes1795000000019,
  ChangeNotifications1795000000020,
  WriteRefusals1795000000021,
  CardEnumeration1795000000022,
  Instances1795000000024,
  EndedDeliveriesNotDue1795000000025,
  FingerprintGroups1795000000026,
  AuditTree1795000000027,
  TokenChildrenCascade1795000000028,
  FlowRules1795000000029,
  TransactionAttempts1795000000030,
  Buyers1795000000031,
  AllowedOrigins1795000000032,
  CardEnumerationGroups1795000000033,
  KeyCustody1795000000034,
  TenantDataKeys1795000000035,
  NetworkTokens1795000000036,
  Wallets1795000000037,
  TokenImports1795000000038,
  ConnectionTokens1795000000039,
  RelayRefunds1795000000040,
];
