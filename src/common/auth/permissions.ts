export const APPLICATION_TYPES = ['public', 'private', 'management'] as const;
export type ApplicationType = (typeof APPLICATION_TYPES)[number];

export interface PermissionDefinition {
  type: string;
  description: string;
  application_types: ApplicationType[];
}

/** The permission catalog: which application types may hold each permission. */
export const PERMISSIONS: readonly PermissionDefinition[] = [
  {
    type: 'token:create',
    description: 'Create tokens (tokenize, create token)',
    application_types: ['public', 'private'],
  },
  { type: 'token:read', description: 'Get and list tokens (masked)', application_types: ['private'] },
  {
    type: 'token:update',
    description: 'Update token metadata, search indexes and expiry',
    application_types: ['public', 'private'],
  },
  { type: 'token:delete', description: 'Delete tokens', application_types: ['private'] },
  { type: 'token:search', description: 'Search tokens', application_types: ['private'] },
  {
    type: 'token:use',
    description: 'Create and void transactions with a token',
    application_types: ['private'],
  },
  {
    type: 'token:import',
    description: 'Import cards (an encrypted file) and read the import key, jobs and results',
    application_types: ['management'],
  },
  {
    type: 'log:read',
    description: 'List audit logs and their entity types',
    application_types: ['management'],
  },
  { type: 'tenant:read', description: 'Read the tenant', application_types: ['management'] },
  { type: 'application:create', description: 'Create applications', application_types: ['management'] },
  {
    type: 'application:read',
    description: 'Get and list applications and their keys',
    application_types: ['management'],
  },
  {
    type: 'application:update',
    description: 'Update applications and create or revoke their keys',
    application_types: ['management'],
  },
  { type: 'application:delete', description: 'Delete applications', application_types: ['management'] },
  {
    type: 'orchestration:connection_formulas',
    description: 'List connection formulas',
    application_types: ['private'],
  },
  {
    type: 'orchestration:connections:create',
    description: 'Create connections',
    application_types: ['private'],
  },
  {
    type: 'orchestration:connections:update',
    description: 'Update, list and get connections',
    application_types: ['private'],
  },
  {
    type: 'orchestration:connections:delete',
    description: 'Delete connections',
    application_types: ['private'],
  },
  {
    type: 'orchestration:transactions:read',
    description: 'Get and list transactions',
    application_types: ['private'],
  },
  {
    type: 'orchestration:transaction:capture',
    description: 'Capture transactions',
    application_types: ['private'],
  },
  {
    type: 'orchestration:transaction:refund',
    description: 'Refund transactions',
    application_types: ['private'],
  },
  {
    type: 'orchestration:relay',
    description:
      'Refund payments made at a vendor before the migration (relay refunds), and get and list them',
    application_types: ['private', 'management'],
  },
  {
    type: 'orchestration:flows:read',
    description: 'List and get routing rules, and evaluate them for a transaction',
    application_types: ['private', 'management'],
  },
  {
    type: 'orchestration:flows:update',
    description: 'Create, update, reorder and delete routing rules',
    application_types: ['private', 'management'],
  },
  {
    type: 'orchestration:buyers:read',
    description: 'List and get buyers and their stored cards, and name a buyer in a transaction',
    application_types: ['private'],
  },
  { type: 'orchestration:buyers:create', description: 'Create buyers', application_types: ['private'] },
  {
    type: 'orchestration:buyers:update',
    description: 'Update buyers, and store and remove their cards',
    application_types: ['private'],
  },
  { type: 'orchestration:buyers:delete', description: 'Delete buyers', application_types: ['private'] },
  { type: 'proxy:create', description: 'Create pre-configured proxies', application_types: ['management'] },
  {
    type: 'proxy:read',
    description: 'Get and list pre-configured proxies',
    application_types: ['management'],
  },
  { type: 'proxy:update', description: 'Update pre-configured proxies', application_types: ['management'] },
  { type: 'proxy:delete', description: 'Delete pre-configured proxies', application_types: ['management'] },
  { type: 'webhook:create', description: 'Create webhooks', application_types: ['management'] },
  {
    type: 'webhook:read',
    description: 'Get and list webhooks and their deliveries',
    application_types: ['management'],
  },
  {
    type: 'webhook:update',
    description: 'Update webhooks and retry their deliveries',
    application_types: ['management'],
  },
  { type: 'webhook:delete', description: 'Delete webhooks', application_types: ['management'] },
  {
    type: 'wallet:manage',
    description: 'Create, list, activate and delete Apple Pay and Google Pay merchant keys',
    application_types: ['management'],
  },
];

export type Permission =
  | 'token:create'
  | 'token:read'
  | 'token:update'
  | 'token:delete'
  | 'token:search'
  | 'token:use'
  | 'token:import'
  | 'log:read'
  | 'tenant:read'
  | 'application:create'
  | 'application:read'
  | 'application:update'
  | 'application:delete'
  | 'orchestration:connection_formulas'
  | 'orchestration:connections:create'
  | 'orchestration:connections:update'
  | 'orchestration:connections:delete'
  | 'orchestration:transactions:read'
  | 'orchestration:transaction:capture'
  | 'orchestration:transaction:refund'
  | 'orchestration:relay'
  | 'orchestration:flows:read'
  | 'orchestration:flows:update'
  | 'orchestration:buyers:read'
  | 'orchestration:buyers:create'
  | 'orchestration:buyers:update'
  | 'orchestration:buyers:delete'
  | 'proxy:create'
  | 'proxy:read'
  | 'proxy:update'
  | 'proxy:delete'
  | 'webhook:create'
  | 'webhook:read'
  | 'webhook:update'
  | 'webhook:delete'
  | 'wallet:manage';

const BY_TYPE = new Map(PERMISSIONS.map((p) => [p.type, p]));

export function isKnownPermission(permission: string): permission is Permission {
  return BY_TYPE.has(permission);
}

export function isPermissionAllowedFor(permission: string, type: ApplicationType): boolean {
  return BY_TYPE.get(permission)?.application_types.includes(type) ?? false;
}

export function permissionsFor(type: ApplicationType): Permission[] {
  return PERMISSIONS.filter((p) => p.application_types.includes(type)).map((p) => p.type as Permission);
}
