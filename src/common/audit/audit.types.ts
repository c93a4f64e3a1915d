/** The entity types the service writes logs for, with their display names. */
export const ENTITY_TYPES = {
  token: 'Token',
  application: 'Application',
  tenant: 'Tenant',
  session: 'Session',
  connection: 'Connection',
  transaction: 'Transaction',
  proxy: 'Proxy',
  webhook: 'Webhook',
  flow_rule: 'Flow rule',
  buyer: 'Buyer',
  wallet_key: 'Wallet merchant key',
  relay_refund: 'Relay refund',
  token_import: 'Token import',
} as const;
export type EntityType = keyof typeof ENTITY_TYPES;

/** A key-encrypting key version: the entity of the system tenant's rows only (docs/keys.md), never a tenant's. */
export type SystemEntityType = 'key';

/**
 * What the `entity_type` filter of `GET /logs` takes: every type the service
 * writes, and `card`, `bank` and `network_token`, which select the rows of tokens of that type (rows carry `token`).
 */
export const LOG_ENTITY_TYPES = {
  token: 'Token',
  card: 'Card',
  bank: 'Bank',
  network_token: 'Network token',
  application: 'Application',
  tenant: 'Tenant',
  session: 'Session',
  connection: 'Connection',
  transaction: 'Transaction',
  proxy: 'Proxy',
  webhook: 'Webhook',
  flow_rule: 'Flow rule',
  buyer: 'Buyer',
  wallet_key: 'Wallet merchant key',
  relay_refund: 'Relay refund',
  token_import: 'Token import',
} as const;
export type LogEntityType = keyof typeof LOG_ENTITY_TYPES;

/** The token types a row of a token records (`token_type`). */
export type AuditTokenType = 'token' | 'card' | 'bank' | 'network_token';

/**
 * `use`: a proxy request went out; `reveal`: one row per token read in clear through a reveal rule,
 * besides the read's; `refuse`: a request refused as abuse (a tokenize past the
 * card enumeration limit), written although the request changed nothing.
 */
export const OPERATIONS = [
  'create',
  'read',
  'update',
  'delete',
  'search',
  'use',
  'reveal',
  'refuse',
] as const;
export type Operation = (typeof OPERATIONS)[number];

/** One audit log entry before it is written; the message must never hold sensitive data. */
export interface AuditEntry {
  entityType: EntityType | SystemEntityType;
  entityId: string | null;
  operation: Operation;
  message: string;
  /** Rows of tokens: the token's type. */
  tokenType?: AuditTokenType;
}

/** Who an entry is attributed to: the application (for a session key, the public application that made it). */
export interface AuditActor {
  tenantId: string;
  /** Null for the buyer acting on a payment approval page (actor_type `buyer`). */
  applicationId: string | null;
  sessionId?: string;
  /** With no application: a request through a proxy without `require_auth` (actor_type `anonymous`). */
  anonymous?: boolean;
  /** With no application: the service's own background work, such as a connection's verification (actor_type `system`). */
  system?: boolean;
}
