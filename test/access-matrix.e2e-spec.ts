import { encryptTo } from './support/card-files';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { AuditCheckpointer } from '../src/common/audit/audit-checkpointer.service';
import { Clock } from '../src/common/jobs/clock';
import { waitFor } from './support/wait';
import { ApplePaySender } from './support/wallets/apple-pay-sender';
import { GooglePayTestSender } from './support/wallets/google-pay-sender';
import { newApplication, newTenant, startApp, TestApp } from './support/app';
import { newConnection } from './support/orchestration';

/**
 * A generated tenant-and-permission matrix. Every keyed operation of openapi.json (and the aliases the
 * service also serves) is called by every kind of caller that must be refused: no key, a revoked key, a key of
 * a deleted application, a key with one letter's case changed, an expired session, an unauthorized
 * session, a key of the wrong application type, a key (or session) of the right type without the
 * permission, and keys and a session of another tenant holding every permission. Each answer is checked
 * for its status, for a problem+json body, for leaks (keys, the card number, the connection secret,
 * tenant A's ids it was not sent) and, for a resource addressed by id, for leaving that resource as it
 * was. Then: tenant B naming tenant A's ids in bodies and queries, tenant A's idempotency keys, callers
 * holding permissions only through a rule scoped elsewhere, and a control that tenant A's own full keys
 * succeed with the same requests (so that every refusal comes from access, not from the request).
 */

type Kind = 'public' | 'private' | 'management';
const KINDS: readonly Kind[] = ['public', 'private', 'management'];
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
type Method = (typeof METHODS)[number];

/** The application types that may hold each permission (docs/permissions.md). */
const CATALOG: Record<string, Kind[]> = {
  'token:create': ['public', 'private'],
  'token:read': ['private'],
  'token:update': ['public', 'private'],
  'token:delete': ['private'],
  'token:search': ['private'],
  'token:use': ['private'],
  'token:import': ['management'],
  'log:read': ['management'],
  'tenant:read': ['management'],
  'application:create': ['management'],
  'application:read': ['management'],
  'application:update': ['management'],
  'application:delete': ['management'],
  'orchestration:connection_formulas': ['private'],
  'orchestration:connections:create': ['private'],
  'orchestration:connections:update': ['private'],
  'orchestration:connections:delete': ['private'],
  'orchestration:transactions:read': ['private'],
  'orchestration:transaction:capture': ['private'],
  'orchestration:transaction:refund': ['private'],
  'orchestration:relay': ['private', 'management'],
  'orchestration:flows:read': ['private', 'management'],
  'orchestration:flows:update': ['private', 'management'],
  'orchestration:buyers:read': ['private'],
  'orchestration:buyers:create': ['private'],
  'orchestration:buyers:update': ['private'],
  'orchestration:buyers:delete': ['private'],
  'proxy:create': ['management'],
  'proxy:read': ['management'],
  'proxy:update': ['management'],
  'proxy:delete': ['management'],
  'webhook:create': ['management'],
  'webhook:read': ['management'],
  'webhook:update': ['management'],
  'webhook:delete': ['management'],
  'wallet:manage': ['management'],
};
const permissionsOfKind = (kind: Kind) => Object.keys(CATALOG).filter((p) => CATALOG[p].includes(kind));

/**
 * The permission each operation needs ([] is "any valid key"; docs/permissions.md). The v2
 * token routes and GET /applications/{id}/keys/{keyId} need what their v1 and
 * list-keys siblings need.
 */
const DOCUMENTED_PERMISSIONS: Record<string, string[]> = {
  createApplication: ['application:create'],
  listApplications: ['application:read'],
  getApplicationByKey: [],
  getApplication: ['application:read'],
  updateApplication: ['application:update'],
  deleteApplication: ['application:delete'],
  listApplicationKeys: ['application:read'],
  createApplicationKey: ['application:update'],
  getApplicationKey: ['application:read'],
  deleteApplicationKey: ['application:update'],
  listPermissions: [],
  getTenant: ['tenant:read'],
  tokenize: ['token:create'],
  createToken: ['token:create'],
  listTokens: ['token:read'],
  searchTokens: ['token:search'],
  listTokensV2: ['token:read'],
  searchTokensV2: ['token:search'],
  getToken: ['token:read'],
  updateToken: ['token:update'],
  deleteToken: ['token:delete'],
  getImportKey: ['token:import'],
  createImport: ['token:import'],
  getImport: ['token:import'],
  listImportResults: ['token:import'],
  createSession: [],
  authorizeSession: [],
  listLogs: ['log:read'],
  listLogEntityTypes: ['log:read'],
  getLogCheckpoint: ['log:read'],
  listLogCheckpointKeys: ['log:read'],
  getLogProof: ['log:read'],
  getLogConsistencyProof: ['log:read'],
  listConnectionFormulas: ['orchestration:connection_formulas'],
  createConnection: ['orchestration:connections:create'],
  listConnections: ['orchestration:connections:update'],
  getConnection: ['orchestration:connections:update'],
  updateConnection: ['orchestration:connections:update'],
  deleteConnection: ['orchestration:connections:delete'],
  createTransaction: ['token:use'],
  listTransactions: ['orchestration:transactions:read'],
  getTransaction: ['orchestration:transactions:read'],
  captureTransaction: ['orchestration:transaction:capture'],
  voidTransaction: ['token:use'],
  createRefund: ['orchestration:transaction:refund'],
  listRefunds: ['orchestration:transactions:read'],
  listTransactionAttempts: ['orchestration:transactions:read'],
  createRelayRefund: ['orchestration:relay'],
  listRelayRefunds: ['orchestration:relay'],
  getRelayRefund: ['orchestration:relay'],
  listFlowRules: ['orchestration:flows:read'],
  getFlowRule: ['orchestration:flows:read'],
  createFlowRule: ['orchestration:flows:update'],
  updateFlowRule: ['orchestration:flows:update'],
  deleteFlowRule: ['orchestration:flows:update'],
  evaluateFlow: ['orchestration:flows:read', 'token:use'],
  createBuyer: ['orchestration:buyers:create'],
  listBuyers: ['orchestration:buyers:read'],
  getBuyer: ['orchestration:buyers:read'],
  updateBuyer: ['orchestration:buyers:update'],
  deleteBuyer: ['orchestration:buyers:delete'],
  storeBuyerPaymentMethod: ['orchestration:buyers:update'],
  setBuyerPaymentMethodConnectionTokens: ['orchestration:buyers:update'],
  listBuyerPaymentMethods: ['orchestration:buyers:read'],
  deleteBuyerPaymentMethod: ['orchestration:buyers:update'],
  createProxy: ['proxy:create'],
  listProxies: ['proxy:read'],
  getProxy: ['proxy:read'],
  updateProxy: ['proxy:update'],
  patchProxy: ['proxy:update'],
  deleteProxy: ['proxy:delete'],
  createWebhook: ['webhook:create'],
  listWebhooks: ['webhook:read'],
  listWebhookEventTypes: ['webhook:read'],
  getWebhook: ['webhook:read'],
  updateWebhook: ['webhook:update'],
  deleteWebhook: ['webhook:delete'],
  listWebhookDeliveries: ['webhook:read'],
  retryWebhookDelivery: ['webhook:update'],
  createApplePayMerchantKey: ['wallet:manage'],
  listApplePayMerchantKeys: ['wallet:manage'],
  getApplePayMerchantKey: ['wallet:manage'],
  setApplePayMerchantKeyCertificate: ['wallet:manage'],
  deleteApplePayMerchantKey: ['wallet:manage'],
  createGooglePayMerchantKey: ['wallet:manage'],
  listGooglePayMerchantKeys: ['wallet:manage'],
  getGooglePayMerchantKey: ['wallet:manage'],
  deleteGooglePayMerchantKey: ['wallet:manage'],
  createApplePayToken: ['token:create'],
  createGooglePayToken: ['token:create'],
  ping: [],
};

/** Routes that accept one key kind only (other kinds: 403; docs/permissions.md). */
const KIND_ONLY: Record<string, Kind[]> = { createSession: ['public'], authorizeSession: ['private'] };

/**
 * Routes without a key, and the proxy itself: its key is optional (a pre-configured proxy without
 * `require_auth`), so it is documented with optional security and has its own refusals in
 * test/proxy.e2e-spec.ts.
 */
const PUBLIC_PATH = /^\/(health\/|docs|openapi\.json$|orchestration\/approvals\/|proxy$|proxy\/)/;
const PROXY_DESTINATION = 'https://processor.example/v1';
/**
 * Unresolvable here, so the outbound policy accepts it. Tenant A's webhook takes `token:deleted` only:
 * nothing the refusals leave undone emits it, so its deliveries stay as the test wrote them.
 */
const WEBHOOK_BODY = {
  name: 'access matrix webhook',
  url: 'https://receiver.example/hook',
  events: ['token:deleted'],
};

const CARD_NUMBER = '4242424242424242';
const CARD = { number: CARD_NUMBER, expiration_month: 12, expiration_year: 2030, cvc: '123' };
const CONNECTION_SECRET = 'sk_test_ok_access_matrix';
const CONNECTION_BODY = {
  connection_formula_id: 'stripe-card',
  method: 'card',
  display_name: 'Access matrix Stripe',
  fields: [{ key: 'secret_key', value: CONNECTION_SECRET }],
  accepted_countries: ['US'],
  accepted_currencies: ['USD'],
  active: true,
};

interface OpenApiOperation {
  operationId: string;
  security?: unknown[];
  responses: Record<string, { description?: string }>;
}

interface Operation {
  id: string;
  method: Method;
  path: string;
  route: string;
  /** From the 403 description; undefined when it names none (a failure of its own). */
  permissions: string[] | undefined;
  /** The application kinds whose key may call the operation when it holds the permissions. */
  kinds: Kind[];
  success: number;
}

function permissionsIn(description = ''): string[] | undefined {
  if (description.includes('Any valid key.')) return [];
  return /Requires the permissions? ([a-z_:, ]+)\./.exec(description)?.[1].split(', ');
}

const spec = JSON.parse(readFileSync(join(__dirname, '..', 'openapi.json'), 'utf8')) as {
  paths: Record<string, Partial<Record<string, OpenApiOperation>>>;
};

const OPERATIONS: Operation[] = Object.entries(spec.paths)
  .filter(([path]) => !PUBLIC_PATH.test(path))
  .flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const op = item[method];
      if (!op?.security?.length) return [];
      const permissions = permissionsIn(op.responses['403']?.description);
      const kinds =
        KIND_ONLY[op.operationId] ??
        (permissions?.length
          ? KINDS.filter((k) => permissions.every((p) => CATALOG[p]?.includes(k)))
          : KINDS);
      const success = Number(Object.keys(op.responses).find((status) => status.startsWith('2')));
      return [
        {
          id: op.operationId,
          method,
          path,
          route: `${method.toUpperCase()} ${path}`,
          permissions,
          kinds: [...kinds],
          success,
        },
      ];
    }),
  );

/**
 * Routes the service serves that openapi.json leaves out as aliases: they must be guarded
 * exactly as the operation they stand for.
 */
const ALIASES: Operation[] = (
  [
    ['listConnectionFormulasByPost', 'post', '/orchestration/connection_formulas', 'listConnectionFormulas'],
    ['listConnectionFormulasAlias', 'get', '/orchestration/connection/formulas', 'listConnectionFormulas'],
    [
      'listConnectionFormulasAliasByPost',
      'post',
      '/orchestration/connection/formulas',
      'listConnectionFormulas',
    ],
    ['updateConnectionByPost', 'post', '/orchestration/connections/{id}', 'updateConnection'],
    ['listConnectionsByPut', 'put', '/orchestration/connections', 'listConnections'],
  ] as const
).map(([id, method, path, standsFor]) => {
  const original = OPERATIONS.find((op) => op.id === standsFor)!;
  return {
    ...original,
    id,
    method,
    path,
    route: `${method.toUpperCase()} ${path} (documented alias of ${original.route}, not in openapi.json)`,
    success: 200,
  };
});
const ALL_OPERATIONS = [...OPERATIONS, ...ALIASES];
const LISTS = new Set([
  'searchTokens',
  'searchTokensV2',
  'listConnectionFormulasByPost',
  'listConnectionFormulasAliasByPost',
]);

interface AppRef {
  id: string;
  key: string;
  keyId: string;
}

/** The resources a request addresses: path ids and the ids some bodies name. */
interface Refs {
  applicationId: string;
  keyId: string;
  tokenId: string;
  connectionId: string;
  transactionId: string;
  nonce: string;
  proxyId: string;
  webhookId: string;
  deliveryId: string;
  /** A route-transaction rule of tenant A (it matches only JPY: no payment of this file uses it). */
  ruleId: string;
  /** A buyer of tenant A, and the card token stored for it (the same card as `tokenId`). */
  buyerId: string;
  storedTokenId: string;
  /** A card import of tenant A, and an encrypted file of one card for its import key. */
  importId: string;
  importFile: Buffer;
  /** A relay refund of tenant A's (through its sandbox connection). */
  relayRefundId: string;
  /** Tenant A's oldest audit log row, and two sizes of its checkpoints. */
  logId: string;
  firstSize: number;
  secondSize: number;
  /** Tenant A's active Apple Pay key and its certificate, its active Google Pay key. */
  appleKeyId: string;
  appleCertificate: string;
  googleKeyId: string;
  /**
   * A payload of each wallet for tenant A's keys, made last before the tests: no refused caller uses it up
   * (each is refused before its token is made), the control makes it a token.
   */
  applePaymentData: object;
  googlePayToken: string;
}

/** Orchestration resources of tenant A: a card token, an available connection, an authorized payment. */
interface PaymentSet {
  tokenId: string;
  connectionId: string;
  transactionId: string;
}

interface World {
  a: {
    tenantId: string;
    bootstrapKey: string;
    full: Record<Kind, AppRef>;
    lacking: Map<string, AppRef>;
    revoked: Record<Kind, string>;
    deleted: Record<Kind, string>;
    expiredSession: string;
    unauthorizedSession: string;
    unauthorizedNonce: string;
    /** Authorized sessions by what they were granted: FULL_SESSION, or lackingId('private', ...). */
    sessions: Map<string, string>;
    refs: Refs;
    capturedTransactionId: string;
    /** Callers holding every private permission only through a rule on SCOPE_CONTAINER / its one token. */
    scoped: Record<ScopedCaller, { key: string; set: PaymentSet }>;
  };
  b: { full: Record<Kind, AppRef>; session: string; connectionId: string; tokenId: string };
  /** Values no response may show (clear keys, the card number, the connection secret). */
  secrets: Map<string, string>;
  /** Tenant A's identifiers: no refusal and no response to tenant B may show one it was not sent. */
  ids: Map<string, string>;
  /** Tenant A's tokens, connections, transactions and refund: none is within the rule-scoped callers' scope. */
  resources: Map<string, string>;
}

interface Caller {
  name: string;
  expected: number;
  key: (w: World) => string | undefined;
  /** `resource`: another tenant addresses A's resource by id; `list`: another tenant lists its own. */
  cross?: 'resource' | 'list';
}

/** Keys are case-sensitive (docs/permissions.md): the same key with one letter's case changed is unknown. */
function caseChanged(key: string): string {
  const at = key.search(/[A-Za-z][0-9]*$/);
  const letter = key[at];
  const flipped = letter === letter.toUpperCase() ? letter.toLowerCase() : letter.toUpperCase();
  return `${key.slice(0, at)}${flipped}${key.slice(at + 1)}`;
}

const FULL_SESSION = 'every private permission';
const lackingId = (kind: Kind, permissions: string[]) => `${kind} without ${permissions.join(', ')}`;

/** A session may hold any private permission, never a management one, and may not create or authorize sessions. */
const sessionMay = (op: Operation) =>
  !KIND_ONLY[op.id] && (op.permissions ?? []).every((p) => CATALOG[p]?.includes('private'));
const isList = (op: Operation) => !op.path.includes('{') && (op.method === 'get' || LISTS.has(op.id));

function callersFor(op: Operation): Caller[] {
  const permissions = op.permissions ?? [];
  const callers: Caller[] = [
    { name: 'no BT-API-KEY header', expected: 401, key: () => undefined },
    ...op.kinds.map((kind) => ({
      name: `revoked ${kind} key (of an application with every ${kind} permission)`,
      expected: 401,
      key: (w: World) => w.a.revoked[kind],
    })),
    ...op.kinds.map((kind) => ({
      name: `key of a deleted ${kind} application (that held every ${kind} permission)`,
      expected: 401,
      key: (w: World) => w.a.deleted[kind],
    })),
    {
      name: `${op.kinds[0]} key with every permission, one letter's case changed`,
      expected: 401,
      key: (w) => caseChanged(w.a.full[op.kinds[0]].key),
    },
    { name: 'expired session key', expected: 401, key: (w) => w.a.expiredSession },
    { name: 'unauthorized session key', expected: 403, key: (w) => w.a.unauthorizedSession },
    ...KINDS.filter((kind) => !op.kinds.includes(kind)).map((kind) => ({
      name: `${kind} key with every ${kind} permission (wrong application type)`,
      expected: 403,
      key: (w: World) => w.a.full[kind].key,
    })),
    ...(permissions.length
      ? op.kinds.map((kind) => ({
          name: `${kind} key with every ${kind} permission but ${permissions.join(', ')}`,
          expected: 403,
          key: (w: World) => w.a.lacking.get(lackingId(kind, permissions))?.key,
        }))
      : []),
  ];
  if (!sessionMay(op)) {
    callers.push({
      name: 'session key authorized with every private permission (a session may not call this)',
      expected: 403,
      key: (w) => w.a.sessions.get(FULL_SESSION),
    });
  } else if (permissions.length) {
    callers.push({
      name: `session key authorized with every private permission but ${permissions.join(', ')}`,
      expected: 403,
      key: (w) => w.a.sessions.get(lackingId('private', permissions)),
    });
  }
  const others = [
    ...op.kinds.map((kind) => ({
      kind,
      what: `with every ${kind} permission`,
      key: (w: World) => w.b.full[kind].key,
    })),
    ...(sessionMay(op)
      ? [
          {
            kind: 'session',
            what: 'authorized with every private permission',
            key: (w: World) => w.b.session,
          },
        ]
      : []),
  ];
  // A path addressing a resource (`{action}` names a kind of rule, not a resource of tenant A).
  if (op.path.replace('{action}', '').includes('{')) {
    callers.push(
      ...others.map(({ kind, what, key }) => ({
        name: `tenant B ${kind} key ${what}, on tenant A's resource`,
        expected: 404,
        key,
        cross: 'resource' as const,
      })),
    );
  } else if (isList(op)) {
    callers.push(
      ...others.map(({ kind, what, key }) => ({
        name: `tenant B ${kind} key ${what} (its own list shows nothing of tenant A)`,
        // The consistency of tenant A's checkpoint sizes: not sizes of tenant B's log.
        expected: op.id === 'getLogConsistencyProof' ? 400 : 200,
        key,
        cross: 'list' as const,
      })),
    );
  }
  return callers;
}

/**
 * A rule grants its permissions on its container (docs/permissions.md) (or on the tokens its conditions
 * match) only; flat permissions alone hold everywhere. These callers hold every private permission, but
 * only through such a rule, and none of the resources they address is in its scope.
 */
const SCOPE_CONTAINER = '/general/matrix/';
type ScopedCaller = 'app' | 'session';
const SCOPED_CALLERS: Record<ScopedCaller, string> = {
  app: `private key holding every private permission only through a rule on container ${SCOPE_CONTAINER}`,
  session:
    'session key authorized with every private permission only by a rule on one other token (id equals)',
};

/**
 * What a rule-scoped caller must get: a resource addressed by id is refused (403, or 404 as for a token it
 * may not learn of) and left unchanged; a list shows nothing outside the scope (or is refused); creating a
 * card token (in /pci/high/) or a connection (in no container at all) is a 403; paying with a token
 * outside the scope is refused (the service reports a token it may not see as "no such token", a 400).
 */
function scopedExpectation(op: Operation): number[] {
  if (op.path.includes('{')) return [403, 404];
  if (isList(op)) return [200, 403];
  if (op.id === 'createTransaction') return [400, 403, 404];
  return [403];
}
/** The rule-scoped callers run through the operations with deletions last, so that none hides another. */
const SCOPED_OPERATIONS = ALL_OPERATIONS.filter((op) => op.permissions?.length && sessionMay(op)).sort(
  (x, y) => Number(x.method === 'delete') - Number(y.method === 'delete'),
);

/** A minimal valid body per operation (none for operations without one). */
function bodyFor(opId: string, r: Refs): object | undefined {
  switch (opId) {
    case 'createApplication':
      return { name: 'access matrix app', type: 'public', permissions: ['token:create'] };
    case 'updateApplication':
      return { name: 'access matrix target, renamed' };
    case 'tokenize':
    case 'createToken':
      return { type: 'card', data: CARD };
    case 'searchTokens':
      return { query: 'type:card', page: 1, size: 20 };
    case 'searchTokensV2':
      return { query: 'type:card', size: 20 };
    case 'updateToken':
      return { metadata: { access_matrix: 'patched' } };
    case 'authorizeSession':
      return { nonce: r.nonce, permissions: ['token:create'] };
    case 'createConnection':
    case 'updateConnection':
    case 'updateConnectionByPost':
      return CONNECTION_BODY;
    case 'createTransaction':
      return { amount: 1299, currency: 'USD', connection_id: r.connectionId, token: r.tokenId };
    case 'captureTransaction':
      return {};
    case 'createRefund':
      return { amount: 100 };
    case 'createRelayRefund':
      return {
        connection_id: r.connectionId,
        vendor_payment_id: 'pi_3AccessMatrix',
        amount: 100,
        currency: 'USD',
      };
    case 'createFlowRule':
    case 'updateFlowRule':
      return {
        description: 'access matrix rule',
        conditions: [{ name: 'currency', operator: 'is_one_of', value: ['JPY'] }],
        outcome: { type: 'list', result: [r.connectionId] },
        position: 1,
      };
    case 'evaluateFlow':
      return { amount: 1299, currency: 'USD', token: r.tokenId };
    case 'createImport':
      return r.importFile;
    case 'createBuyer':
    case 'updateBuyer':
      return { display_name: 'access matrix buyer' };
    case 'storeBuyerPaymentMethod':
      // Stored for the buyer already: the control's success is the 200 that answers the stored card.
      return { token: r.storedTokenId };
    case 'setBuyerPaymentMethodConnectionTokens':
      // The empty list: the stored card answered, with no processor's token.
      return { connection_tokens: [] };
    case 'createProxy':
    case 'updateProxy':
      return { name: 'access matrix proxy', destination_url: PROXY_DESTINATION };
    case 'patchProxy':
      return { name: 'access matrix proxy, patched' };
    case 'createWebhook':
    case 'updateWebhook':
      return WEBHOOK_BODY;
    case 'setApplePayMerchantKeyCertificate':
      return { certificate: r.appleCertificate };
    case 'createGooglePayMerchantKey':
      return { gateway_merchant_id: 'access-matrix' };
    case 'createApplePayToken':
      return { payment_data: r.applePaymentData };
    case 'createGooglePayToken':
      return { token: r.googlePayToken };
    default:
      return undefined;
  }
}

/** `{id}` by the path's prefix, `{keyId}` an application key id. */
function fillPath(path: string, r: Refs): string {
  const id = path.startsWith('/applications/')
    ? r.applicationId
    : path.startsWith('/tokens/imports/')
      ? r.importId
      : /^\/(v2\/)?tokens\//.test(path)
        ? r.tokenId
        : path.startsWith('/orchestration/connections/')
          ? r.connectionId
          : path.startsWith('/orchestration/transactions/')
            ? r.transactionId
            : path.startsWith('/proxies/')
              ? r.proxyId
              : path.startsWith('/webhooks/')
                ? r.webhookId
                : path.startsWith('/logs/')
                  ? r.logId
                  : path.startsWith('/orchestration/flows/')
                    ? r.ruleId
                    : path.startsWith('/orchestration/buyers/')
                      ? r.buyerId
                      : path.startsWith('/wallets/apple-pay/merchant-keys/')
                        ? r.appleKeyId
                        : path.startsWith('/wallets/google-pay/merchant-keys/')
                          ? r.googleKeyId
                          : path.startsWith('/orchestration/relay/refunds/')
                            ? r.relayRefundId
                            : undefined;
  const filled = path
    .replace('{action}', 'route-transaction')
    .replace('{keyId}', r.keyId)
    .replace('{deliveryId}', r.deliveryId)
    .replace('{token_id}', r.storedTokenId)
    .replace('{payment_method_id}', r.storedTokenId)
    .replace('{id}', () => {
      if (!id) throw new Error(`no resource to fill {id} of ${path}`);
      return id;
    });
  if (filled.includes('{')) throw new Error(`unfilled path parameter in ${path}`);
  // Two sizes of tenant A's checkpoints (another tenant's log has other sizes: a 400 for it).
  if (path === '/logs/consistency') return `${filled}?first=${r.firstSize}&second=${r.secondSize}`;
  return filled;
}

describe('access matrix: every keyed operation × every caller that must be refused', () => {
  let t: TestApp;
  let w: World;
  let apple: ApplePaySender;
  const google = new GooglePayTestSender();

  const call = (
    method: Method,
    path: string,
    key: string | undefined,
    body?: object,
    query?: Record<string, string>,
    headers: Record<string, string> = {},
  ) => {
    let req = request(t.http)[method](path).set(headers);
    if (key !== undefined) req = req.set('BT-API-KEY', key);
    if (query) req = req.query(query);
    // A card import's body: an encrypted file (docs/migration.md).
    if (Buffer.isBuffer(body)) req = req.set('Content-Type', 'application/pgp-encrypted');
    return body === undefined ? req : req.send(body);
  };
  const tokenize = async (key: string, body: object = { type: 'card', data: CARD }) =>
    (await call('post', '/tokenize', key, body).expect(201)).body.id as string;
  const pay = async (key: string, connectionId: string, tokenId: string) => {
    const res = await call('post', '/orchestration/transactions', key, {
      amount: 1299,
      currency: 'USD',
      connection_id: connectionId,
      token: tokenId,
    }).expect(201);
    expect(res.body.status).toBe('authorization_succeeded');
    return res.body.id as string;
  };
  const paymentSet = async (key: string): Promise<PaymentSet> => {
    const [tokenId, connection] = await Promise.all([
      tokenize(key),
      newConnection(t, key, { currencies: ['USD'], countries: ['US'] }),
    ]);
    const status = await call('get', `/orchestration/connections/${connection.id}`, key).expect(200);
    expect(status.body.status).toBe('available');
    return { tokenId, connectionId: connection.id, transactionId: await pay(key, connection.id, tokenId) };
  };

  /** A buyer with a card token stored for it. */
  const storedCard = async (key: string) => {
    const buyerId = (
      await call('post', '/orchestration/buyers', key, { display_name: 'matrix buyer' }).expect(201)
    ).body.id as string;
    const storedTokenId = await tokenize(key);
    await call('post', `/orchestration/buyers/${buyerId}/payment-methods`, key, {
      token: storedTokenId,
    }).expect(201);
    return { buyerId, storedTokenId };
  };

  beforeAll(async () => {
    apple = await ApplePaySender.create();
    // Wallet payloads chain to test roots of the file's own (docs/wallets.md).
    const roots = mkdtempSync(join(tmpdir(), 'access-matrix-wallets-'));
    writeFileSync(join(roots, 'apple-root.pem'), apple.rootPem);
    t = await startApp({
      RATE_LIMIT_PER_MINUTE: '1000000',
      APPLE_PAY_ROOT_CA: join(roots, 'apple-root.pem'),
      GOOGLE_PAY_ROOT_KEYS: google.writeRootKeysFile(roots),
    });
    const [tenantA, tenantB] = await Promise.all([newTenant(t, 'tenant A'), newTenant(t, 'tenant B')]);
    const secrets = new Map<string, string>([
      [CARD_NUMBER, 'the card number'],
      [CONNECTION_SECRET, 'the connection secret'],
      [tenantA.managementKey, "tenant A's bootstrap management key"],
      [tenantB.managementKey, "tenant B's bootstrap management key"],
    ]);
    const ids = new Map<string, string>([
      [tenantA.tenantId, "tenant A's id"],
      [tenantA.managementApplicationId, "tenant A's bootstrap management application id"],
    ]);
    const resources = new Map<string, string>();
    const resource = (id: string, label: string) => {
      ids.set(id, `tenant A's ${label}`);
      resources.set(id, `tenant A's ${label}`);
    };

    const app = async (
      tenant: string,
      managementKey: string,
      label: string,
      type: Kind,
      grants: { permissions?: string[]; rules?: unknown[] },
    ): Promise<AppRef> => {
      const created = await newApplication(t, managementKey, { name: label, type, ...grants });
      const ref = { id: created.id, key: created.key, keyId: (created.body.keys as { id: string }[])[0].id };
      secrets.set(ref.key, `${tenant}'s ${label} key`);
      if (tenant === 'tenant A') {
        ids.set(ref.id, `tenant A's ${label} application id`);
        ids.set(ref.keyId, `tenant A's ${label} key id`);
      }
      return ref;
    };
    const fullApps = async (tenant: string, managementKey: string) => {
      const [pub, pvt, mgt] = await Promise.all(
        KINDS.map((kind) =>
          app(tenant, managementKey, `full ${kind}`, kind, { permissions: permissionsOfKind(kind) }),
        ),
      );
      return { public: pub, private: pvt, management: mgt };
    };
    const [aFull, bFull] = await Promise.all([
      fullApps('tenant A', tenantA.managementKey),
      fullApps('tenant B', tenantB.managementKey),
    ]);

    // The session that expires: authorized for 15 s on the service's clock (long enough for the
    // authorization and a tokenize on a loaded machine), shown to work, then its time passes on the clock.
    const expiring = await call('post', '/sessions', aFull.public.key).expect(201);
    const expiresAt = t.app.get(Clock).now().getTime() + 15_000;
    await call('post', '/sessions/authorize', aFull.private.key, {
      nonce: expiring.body.nonce,
      permissions: ['token:create'],
      expires_at: new Date(expiresAt).toISOString(),
    }).expect(204);
    secrets.set(expiring.body.session_key, "tenant A's expired session key");
    secrets.set(expiring.body.nonce, "tenant A's expired session nonce");
    resource(
      await tokenize(expiring.body.session_key, { type: 'token', data: 'made through the session' }),
      'session-made token id',
    );

    const session = async (label: string) => {
      const created = await call('post', '/sessions', aFull.public.key).expect(201);
      secrets.set(created.body.session_key, `tenant A's ${label} session key`);
      secrets.set(created.body.nonce, `tenant A's ${label} session nonce`);
      return created.body as { session_key: string; nonce: string };
    };
    const authorizedSession = async (
      tenant: string,
      full: Record<Kind, AppRef>,
      label: string,
      grants: { permissions?: string[]; rules?: unknown[] },
    ) => {
      const created = await call('post', '/sessions', full.public.key).expect(201);
      await call('post', '/sessions/authorize', full.private.key, {
        nonce: created.body.nonce,
        ...grants,
      }).expect(204);
      secrets.set(created.body.session_key, `${tenant}'s session key authorized with ${label}`);
      return [label, created.body.session_key as string] as const;
    };
    const revoke = async (kind: Kind) => {
      const path = `/applications/${aFull[kind].id}/keys`;
      const created = await call('post', path, tenantA.managementKey).expect(201);
      await call('delete', `${path}/${created.body.id}`, tenantA.managementKey).expect(204);
      secrets.set(created.body.key, `tenant A's revoked ${kind} key`);
      ids.set(created.body.id, `tenant A's revoked ${kind} key id`);
      return created.body.key as string;
    };
    const deleteApp = async (kind: Kind) => {
      const gone = await app('tenant A', tenantA.managementKey, `deleted ${kind}`, kind, {
        permissions: permissionsOfKind(kind),
      });
      await call('delete', `/applications/${gone.id}`, tenantA.managementKey).expect(204);
      return gone.key;
    };

    const lackingWanted = new Map<string, [Kind, string[]]>();
    const sessionsWanted = new Map<string, string[]>([[FULL_SESSION, permissionsOfKind('private')]]);
    for (const op of ALL_OPERATIONS) {
      const needed = op.permissions ?? [];
      if (!needed.length) continue;
      for (const kind of op.kinds) lackingWanted.set(lackingId(kind, needed), [kind, needed]);
      if (sessionMay(op))
        sessionsWanted.set(
          lackingId('private', needed),
          permissionsOfKind('private').filter((p) => !needed.includes(p)),
        );
    }

    const scopeToken = await tokenize(aFull.private.key, {
      type: 'token',
      data: 'in scope',
      containers: [SCOPE_CONTAINER],
    });
    const everyPrivate = permissionsOfKind('private');
    const [
      lacking,
      revokedKeys,
      deletedKeys,
      aSessions,
      bSession,
      unauthorized,
      victim,
      target,
      main,
      bToken,
      bConnection,
      scopedApp,
      scopedSession,
      scopedAppSet,
      scopedSessionSet,
    ] = await Promise.all([
      Promise.all(
        [...lackingWanted].map(async ([label, [kind, without]]) => {
          const permissions = permissionsOfKind(kind).filter((p) => !without.includes(p));
          return [label, await app('tenant A', tenantA.managementKey, label, kind, { permissions })] as const;
        }),
      ),
      Promise.all(KINDS.map(revoke)),
      Promise.all(KINDS.map(deleteApp)),
      Promise.all(
        [...sessionsWanted].map(([label, permissions]) =>
          authorizedSession('tenant A', aFull, label, { permissions }),
        ),
      ),
      authorizedSession('tenant B', bFull, FULL_SESSION, { permissions: everyPrivate }),
      session('unauthorized'),
      session('victim'),
      app('tenant A', tenantA.managementKey, 'target', 'private', { permissions: ['token:read'] }),
      paymentSet(aFull.private.key),
      tokenize(bFull.private.key),
      newConnection(t, bFull.private.key, { currencies: ['USD'], countries: ['US'] }),
      app('tenant A', tenantA.managementKey, 'rule-scoped private', 'private', {
        rules: [{ priority: 1, container: SCOPE_CONTAINER, permissions: everyPrivate }],
      }),
      authorizedSession('tenant A', aFull, 'a rule on one token', {
        rules: [
          {
            priority: 1,
            conditions: [{ attribute: 'id', operator: 'equals', value: scopeToken }],
            permissions: everyPrivate,
          },
        ],
      }),
      paymentSet(aFull.private.key),
      paymentSet(aFull.private.key),
    ]);
    for (const [label, set] of [
      ['', main],
      ['(rule-scoped app) ', scopedAppSet],
      ['(rule-scoped session) ', scopedSessionSet],
    ] as const) {
      resource(set.tokenId, `${label}card token id`);
      resource(set.connectionId, `${label}connection id`);
      resource(set.transactionId, `${label}authorized transaction id`);
    }

    const captured = await pay(aFull.private.key, main.connectionId, main.tokenId);
    await call('post', `/orchestration/transactions/${captured}/capture`, aFull.private.key, {}).expect(200);
    const refund = await call('post', `/orchestration/transactions/${captured}/refunds`, aFull.private.key, {
      amount: 100,
    }).expect(201);
    resource(captured, 'captured transaction id');
    resource(refund.body.id, 'refund id');
    const relayRefund = await call(
      'post',
      '/orchestration/relay/refunds',
      aFull.private.key,
      bodyFor('createRelayRefund', { connectionId: main.connectionId } as Refs),
    ).expect(201);
    resource(relayRefund.body.id, 'relay refund id');
    const proxy = await call('post', '/proxies', aFull.management.key, {
      name: 'access matrix proxy',
      destination_url: PROXY_DESTINATION,
    }).expect(201);
    resource(proxy.body.id, 'proxy id');
    const rule = await call(
      'post',
      '/orchestration/flows/card-transaction/actions/route-transaction/rules',
      aFull.private.key,
      bodyFor('createFlowRule', { connectionId: main.connectionId } as Refs),
    ).expect(201);
    resource(rule.body.id, 'rule id');
    const buyer = await storedCard(aFull.private.key);
    resource(buyer.buyerId, 'buyer id');
    resource(buyer.storedTokenId, 'stored card token id');
    const importKey = (await call('get', '/tokens/imports/key', tenantA.managementKey).expect(200)).body;
    const importFile = await encryptTo(
      importKey.public_key as string,
      `number,expiration_month,expiration_year\n${CARD_NUMBER},12,2030\n`,
      'cards.csv',
    );
    const imported = await call('post', '/tokens/imports', tenantA.managementKey, importFile).expect(202);
    resource(imported.body.id, 'card import id');
    ids.set(proxy.body.key, "tenant A's proxy key");
    const webhook = await call('post', '/webhooks', aFull.management.key, WEBHOOK_BODY).expect(201);
    resource(webhook.body.id, 'webhook id');
    secrets.set(webhook.body.secret, "tenant A's webhook secret");
    // A delivery as the outbox writes it, already failed: the delivery worker leaves it alone.
    const [eventId, deliveryId] = [randomUUID(), randomUUID()];
    const db = t.app.get(DataSource);
    await db.query(
      `INSERT INTO webhook_events (tenant_id, id, type, entity_id, data, created_at)
       VALUES ($1, $2, 'token:deleted', $3, '{}', now())`,
      [tenantA.tenantId, eventId, main.tokenId],
    );
    await db.query(
      `INSERT INTO webhook_deliveries (tenant_id, id, webhook_id, event_id, event_type, entity_id, status,
         attempts, last_status_code, next_attempt_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, 'token:deleted', $5, 'failed', 7, 503, now(), now(), now())`,
      [tenantA.tenantId, deliveryId, webhook.body.id, eventId, main.tokenId],
    );
    resource(deliveryId, 'webhook delivery id');
    ids.set(eventId, "tenant A's webhook event id");
    const appleKey = await call('post', '/wallets/apple-pay/merchant-keys', aFull.management.key).expect(201);
    const appleCertificate = await apple.issueMerchantCertificate(
      appleKey.body.csr,
      'merchant.access.matrix',
    );
    await call('put', `/wallets/apple-pay/merchant-keys/${appleKey.body.id}`, aFull.management.key, {
      certificate: appleCertificate,
    }).expect(200);
    resource(appleKey.body.id, 'Apple Pay merchant key id');
    const googleKey = await call('post', '/wallets/google-pay/merchant-keys', aFull.management.key, {
      gateway_merchant_id: 'access-matrix',
    }).expect(201);
    resource(googleKey.body.id, 'Google Pay merchant key id');

    // The audit log: tenant A's oldest row in two of its checkpoints (a period apart on the service's
    // clock), and a checkpoint of tenant B's log.
    const checkpointSizes = async (tenantId: string): Promise<number[]> =>
      (
        await db.query<{ tree_size: string }[]>(
          'SELECT tree_size FROM audit_checkpoints WHERE tenant_id = $1 ORDER BY tree_size',
          [tenantId],
        )
      ).map((c) => Number(c.tree_size));
    const checkpointed = async (tenantId: string, count: number) =>
      waitFor(
        async () => {
          t.app.get(Clock).advance(6_000);
          await t.app.get(AuditCheckpointer).run();
          return (await checkpointSizes(tenantId)).length >= count;
        },
        { timeoutMs: 30_000, intervalMs: 200, what: `${count} checkpoint(s) of ${tenantId}` },
      );
    await checkpointed(tenantA.tenantId, 1);
    await call('post', '/tokens', aFull.private.key, { type: 'token', data: 'audit matrix' }).expect(201);
    await checkpointed(tenantA.tenantId, 2);
    await checkpointed(tenantB.tenantId, 1);
    const [oldestLog] = await db.query<{ id: string }[]>(
      'SELECT id FROM audit_logs WHERE tenant_id = $1 ORDER BY written, pos LIMIT 1',
      [tenantA.tenantId],
    );
    resource(oldestLog.id, 'audit log id');
    const [firstSize, secondSize] = await checkpointSizes(tenantA.tenantId);

    w = {
      a: {
        tenantId: tenantA.tenantId,
        bootstrapKey: tenantA.managementKey,
        full: aFull,
        lacking: new Map(lacking),
        revoked: { public: revokedKeys[0], private: revokedKeys[1], management: revokedKeys[2] },
        deleted: { public: deletedKeys[0], private: deletedKeys[1], management: deletedKeys[2] },
        expiredSession: expiring.body.session_key,
        unauthorizedSession: unauthorized.session_key,
        unauthorizedNonce: unauthorized.nonce,
        sessions: new Map(aSessions),
        refs: {
          applicationId: target.id,
          keyId: target.keyId,
          tokenId: main.tokenId,
          connectionId: main.connectionId,
          transactionId: main.transactionId,
          nonce: victim.nonce,
          proxyId: proxy.body.id,
          webhookId: webhook.body.id,
          deliveryId,
          ruleId: rule.body.id,
          relayRefundId: relayRefund.body.id,
          ...buyer,
          importId: imported.body.id,
          importFile,
          logId: oldestLog.id,
          firstSize,
          secondSize,
          appleKeyId: appleKey.body.id,
          appleCertificate,
          googleKeyId: googleKey.body.id,
          applePaymentData: {},
          googlePayToken: '',
        },
        capturedTransactionId: captured,
        scoped: {
          app: { key: scopedApp.key, set: scopedAppSet },
          session: { key: scopedSession[1], set: scopedSessionSet },
        },
      },
      b: { full: bFull, session: bSession[1], connectionId: bConnection.id, tokenId: bToken },
      secrets,
      ids,
      resources,
    };

    // The expiring session's time passes on the service's clock (for the rest of the file: no other
    // key or session here expires within seconds).
    const clock = t.app.get(Clock);
    const left = expiresAt + 100 - clock.now().getTime();
    if (left > 0) clock.advance(left);
    // Signed and expiring on the service's clock, which the checkpoints and the session moved on.
    w.a.refs.applePaymentData = await apple.paymentData(
      { certificatePem: appleCertificate, merchantId: 'merchant.access.matrix' },
      { signingTime: clock.now() },
    );
    w.a.refs.googlePayToken = google.token({
      recipientPublicKey: googleKey.body.public_key,
      gatewayMerchantId: 'access-matrix',
      now: clock.now(),
    });
  });
  afterAll(() => t?.close());

  /** Values in the request itself (path, query, body) may come back; no other listed value may. */
  function leaksIn(res: request.Response, sent: string, ids: Map<string, string>): string[] {
    const seen = `${res.text ?? ''}\n${JSON.stringify(res.headers)}`;
    const found: string[] = [];
    for (const [value, label] of w.secrets) if (seen.includes(value)) found.push(label);
    for (const [value, label] of ids) if (seen.includes(value) && !sent.includes(value)) found.push(label);
    return found;
  }

  /**
   * One readable verdict per call: route, caller, status, whether a refusal is problem+json, and what it
   * leaked; the body excerpt is added only when something is wrong.
   */
  function verdict(
    route: string,
    caller: string,
    res: request.Response,
    expected: number | number[],
    sent: string,
    options: {
      ids?: Map<string, string>;
      got?: Record<string, unknown>;
      want?: Record<string, unknown>;
    } = {},
  ) {
    const acceptable = [expected].flat();
    const refused = res.status >= 400;
    const problemJson =
      /^application\/problem\+json/.test(String(res.headers['content-type'])) &&
      res.body?.status === res.status;
    const outcome: Record<string, unknown> = {
      route,
      caller,
      status: res.status,
      ...(refused ? { problem_json: problemJson } : {}),
      leaked: leaksIn(res, sent, options.ids ?? w.ids),
      ...options.got,
    };
    const wanted = {
      route,
      caller,
      status: acceptable.includes(res.status)
        ? res.status
        : acceptable.length === 1
          ? acceptable[0]
          : acceptable.join(' or '),
      ...(refused ? { problem_json: true } : {}),
      leaked: [],
      ...options.want,
    };
    if (!isDeepStrictEqual(outcome, wanted)) outcome.body = (res.text ?? '').slice(0, 300);
    expect(outcome).toEqual(wanted);
  }

  /** What tenant A's own full keys see of the resource a path addresses. */
  async function snapshot(path: string, r: Refs) {
    const mgt = w.a.full.management.key;
    const pvt = w.a.full.private.key;
    const reads: [string, string][] = path.startsWith('/applications/')
      ? [
          [`/applications/${r.applicationId}`, mgt],
          ...(path.includes('{keyId}')
            ? [[`/applications/${r.applicationId}/keys/${r.keyId}`, mgt] as [string, string]]
            : []),
        ]
      : path.startsWith('/tokens/imports/')
        ? [[`/tokens/imports/${r.importId}`, mgt]]
        : /^\/(v2\/)?tokens\//.test(path)
          ? [[`/tokens/${r.tokenId}`, pvt]]
          : path.startsWith('/orchestration/connections/')
            ? [[`/orchestration/connections/${r.connectionId}`, pvt]]
            : path.startsWith('/orchestration/flows/')
              ? [[`/orchestration/flows/card-transaction/actions/route-transaction/rules/${r.ruleId}`, pvt]]
              : path.startsWith('/orchestration/buyers/')
                ? [
                    [`/orchestration/buyers/${r.buyerId}`, pvt],
                    [`/orchestration/buyers/${r.buyerId}/payment-methods`, pvt],
                  ]
                : path.startsWith('/orchestration/relay/refunds/')
                  ? [[`/orchestration/relay/refunds/${r.relayRefundId}`, pvt]]
                  : path.startsWith('/proxies/')
                    ? [[`/proxies/${r.proxyId}`, mgt]]
                    : path.startsWith('/wallets/apple-pay/')
                      ? [[`/wallets/apple-pay/merchant-keys/${r.appleKeyId}`, mgt]]
                      : path.startsWith('/wallets/google-pay/')
                        ? [[`/wallets/google-pay/merchant-keys/${r.googleKeyId}`, mgt]]
                        : path.startsWith('/webhooks/')
                          ? [
                              [`/webhooks/${r.webhookId}`, mgt],
                              [`/webhooks/${r.webhookId}/deliveries`, mgt],
                            ]
                          : [
                              [`/orchestration/transactions/${r.transactionId}`, pvt],
                              [`/orchestration/transactions/${r.transactionId}/refunds`, pvt],
                            ];
    return Promise.all(
      reads.map(async ([p, key]) => {
        const res = await call('get', p, key);
        return { path: p, status: res.status, body: res.body };
      }),
    );
  }

  /** Calls `op` as `key` on the resources `r`; a call addressing a resource by id must leave it as it was. */
  async function probe(
    op: Operation,
    caller: string,
    key: string | undefined,
    r: Refs,
    expected: number | number[],
    ids: (status: number) => Map<string, string> = () => w.ids,
  ) {
    const path = fillPath(op.path, r);
    const body = bodyFor(op.id, r);
    const sent = `${path}\n${JSON.stringify(body ?? null)}`;
    const watched = op.path.includes('{') && [expected].flat().every((status) => status >= 400);
    const before = watched ? await snapshot(op.path, r) : undefined;
    const res = await call(op.method, path, key, body);
    if (!before) return verdict(op.route, caller, res, expected, sent, { ids: ids(res.status) });
    const after = await snapshot(op.path, r);
    const state = before.some((s) => s.status !== 200)
      ? `missing before the call: ${JSON.stringify(before.map((s) => [s.path, s.status]))}`
      : isDeepStrictEqual(before, after)
        ? 'unchanged'
        : `changed: ${JSON.stringify(after).slice(0, 300)}`;
    verdict(op.route, caller, res, expected, sent, {
      ids: ids(res.status),
      got: { resource: state },
      want: { resource: 'unchanged' },
    });
  }

  it('reads the keyed operations of openapi.json, each naming the permission docs/permissions.md gives it', () => {
    expect(OPERATIONS.length).toBeGreaterThanOrEqual(38);
    const documented = Object.fromEntries(OPERATIONS.map((op) => [op.id, op.permissions]));
    expect(documented).toEqual(DOCUMENTED_PERMISSIONS);
  });

  it('GET /permissions describes the permission catalog of docs/permissions.md', async () => {
    const res = await call('get', '/permissions', w.a.full.private.key).expect(200);
    const served = (res.body as { type: string; application_types: Kind[] }[]).map(
      (p) => [p.type, [...p.application_types].sort()] as const,
    );
    expect(Object.fromEntries(served)).toEqual(
      Object.fromEntries(Object.entries(CATALOG).map(([p, k]) => [p, [...k].sort()])),
    );
  });

  for (const op of ALL_OPERATIONS) {
    describe(op.route, () => {
      for (const caller of callersFor(op)) {
        it(`${caller.name} → ${caller.expected}`, () =>
          probe(op, caller.name, caller.key(w), w.a.refs, caller.expected));
      }
    });
  }

  describe("tenant B naming tenant A's ids in bodies, queries and under its own resources", () => {
    it("POST /orchestration/transactions with tenant A's card token → 400, nothing charged", async () => {
      const body = {
        amount: 1299,
        currency: 'USD',
        connection_id: w.b.connectionId,
        token: w.a.refs.tokenId,
      };
      const res = await call('post', '/orchestration/transactions', w.b.full.private.key, body);
      verdict(
        'POST /orchestration/transactions',
        "tenant B private key, tenant A's token",
        res,
        400,
        JSON.stringify(body),
      );
    });

    it("POST /orchestration/transactions for tenant A's buyer → 400, nothing charged", async () => {
      const body = {
        amount: 1299,
        currency: 'USD',
        connection_id: w.b.connectionId,
        buyer_id: w.a.refs.buyerId,
      };
      const res = await call('post', '/orchestration/transactions', w.b.full.private.key, body);
      verdict(
        'POST /orchestration/transactions',
        "tenant B private key, tenant A's buyer",
        res,
        400,
        JSON.stringify(body),
      );
    });

    it("POST /orchestration/relay/refunds through tenant A's connection → 400, nothing refunded", async () => {
      const body = bodyFor('createRelayRefund', { connectionId: w.a.refs.connectionId } as Refs);
      const res = await call('post', '/orchestration/relay/refunds', w.b.full.private.key, body);
      verdict(
        'POST /orchestration/relay/refunds',
        "tenant B private key, tenant A's connection",
        res,
        400,
        JSON.stringify(body),
      );
    });

    it("POST /orchestration/transactions through tenant A's connection → 400", async () => {
      const body = {
        amount: 1299,
        currency: 'USD',
        connection_id: w.a.refs.connectionId,
        token: w.b.tokenId,
      };
      const res = await call('post', '/orchestration/transactions', w.b.full.private.key, body);
      verdict(
        'POST /orchestration/transactions',
        "tenant B private key, tenant A's connection",
        res,
        400,
        JSON.stringify(body),
      );
    });

    it("POST /sessions/authorize with tenant A's nonce → 400, and A's session stays unauthorized", async () => {
      const body = { nonce: w.a.unauthorizedNonce, permissions: ['token:create'] };
      const res = await call('post', '/sessions/authorize', w.b.full.private.key, body);
      verdict(
        'POST /sessions/authorize',
        "tenant B private key, tenant A's nonce",
        res,
        400,
        JSON.stringify(body),
      );
      const still = await call('post', '/tokenize', w.a.unauthorizedSession, { type: 'token', data: 'x' });
      verdict('POST /tokenize', "tenant A's session after tenant B tried its nonce", still, 403, '');
    });

    it("searches and filtered lists by tenant A's ids come back empty", async () => {
      const a = w.a.refs;
      const pvt = w.b.full.private.key;
      const mgt = w.b.full.management.key;
      const cases: [Method, string, string, object | undefined, Record<string, string> | undefined][] = [
        ['post', '/tokens/search', pvt, { query: `id:${a.tokenId}`, page: 1, size: 20 }, undefined],
        ['post', '/v2/tokens/search', pvt, { query: `id:${a.tokenId}`, size: 20 }, undefined],
        ['get', '/applications', mgt, undefined, { id: a.applicationId }],
        ['get', '/orchestration/transactions', pvt, undefined, { connection_id: a.connectionId }],
        ['get', '/logs', mgt, undefined, { entity_id: a.tokenId }],
        ['get', '/logs', mgt, undefined, { entity_id: a.applicationId }],
      ];
      for (const [method, path, key, body, query] of cases) {
        const res = await call(method, path, key, body, query);
        verdict(
          `${method.toUpperCase()} ${path} ${JSON.stringify(body ?? query)}`,
          'tenant B',
          res,
          200,
          JSON.stringify([body, query]),
          {
            got: { items: res.body?.data?.length },
            want: { items: 0 },
          },
        );
      }
    });

    it("tenant A's key id under tenant B's own application → 404, and the key still works", async () => {
      const path = `/applications/${w.b.full.private.id}/keys/${w.a.full.private.keyId}`;
      for (const method of ['get', 'delete'] as const) {
        const res = await call(method, path, w.b.full.management.key);
        verdict(
          `${method.toUpperCase()} /applications/{B app}/keys/{A key}`,
          'tenant B management key',
          res,
          404,
          path,
        );
      }
      await call('get', '/applications/key', w.a.full.private.key).expect(200);
    });

    it('an idempotency key tenant A used is replayed to no other caller', async () => {
      const cases: [string, string, Kind, object][] = [
        ['/tokens', 'createToken', 'private', { type: 'card', data: CARD }],
        // Routes answering a new key or secret ignore the idempotency key: a management route that does not.
        [
          '/proxies',
          'createProxy',
          'management',
          { name: 'idempotent proxy', destination_url: PROXY_DESTINATION },
        ],
      ];
      for (const [path, opId, kind, body] of cases) {
        const needed = OPERATIONS.find((o) => o.id === opId)!.permissions!;
        const headers = { 'BT-IDEMPOTENCY-KEY': `access-matrix ${opId}` };
        const first = await call('post', path, w.a.full[kind].key, body, undefined, headers).expect(201);
        w.ids.set(first.body.id, `tenant A's idempotent ${opId} result id`);
        // A proxy key is shown on every read of its proxy: not a secret of tenant A's answers.
        if (first.body.key && opId !== 'createProxy')
          w.secrets.set(first.body.key, `tenant A's idempotent ${opId} key`);
        const again = await call('post', path, w.a.full[kind].key, body, undefined, headers);
        expect({
          status: again.status,
          id: again.body.id,
          replayed: again.headers['bt-idempotency-replayed'],
        }).toEqual({
          status: 201,
          id: first.body.id,
          replayed: 'true',
        });
        const others: [string, string | undefined, number][] = [
          ['no BT-API-KEY header', undefined, 401],
          [`revoked ${kind} key`, w.a.revoked[kind], 401],
          ['expired session key', w.a.expiredSession, 401],
          ['unauthorized session key', w.a.unauthorizedSession, 403],
          [`${kind} key without ${needed.join(', ')}`, w.a.lacking.get(lackingId(kind, needed))?.key, 403],
          [`tenant B ${kind} key with every permission`, w.b.full[kind].key, 201],
        ];
        for (const [caller, key, expected] of others) {
          const res = await call('post', path, key, body, undefined, headers);
          verdict(
            `POST ${path} with tenant A's BT-IDEMPOTENCY-KEY`,
            caller,
            res,
            expected,
            JSON.stringify(body),
            {
              got: { replayed: res.headers['bt-idempotency-replayed'] },
              want: { replayed: undefined },
            },
          );
        }
      }
    });

    it("tenant A's captured transaction: every transaction route → 404, nothing changed", async () => {
      const refs = { ...w.a.refs, transactionId: w.a.capturedTransactionId };
      for (const op of OPERATIONS.filter((o) => o.path.startsWith('/orchestration/transactions/{id}'))) {
        await probe(op, 'tenant B private key, captured transaction', w.b.full.private.key, refs, 404);
      }
    });
  });

  for (const scoped of ['app', 'session'] as const) {
    describe(SCOPED_CALLERS[scoped], () => {
      for (const op of SCOPED_OPERATIONS) {
        const expected = scopedExpectation(op);
        it(`${op.route} → ${expected.join(' or ')}`, () => {
          const { key, set } = w.a.scoped[scoped];
          // Its own application and tenant ids may show in what it is allowed; tenant A's resources not.
          return probe(op, SCOPED_CALLERS[scoped], key, { ...w.a.refs, ...set }, expected, (status) =>
            status < 400 ? w.resources : w.ids,
          );
        });
      }
    });
  }

  describe('control: tenant A with a key holding every permission of the right kind succeeds', () => {
    let fresh: PaymentSet & { capturedTransactionId: string };

    beforeAll(async () => {
      const set = await paymentSet(w.a.full.private.key);
      const captured = await pay(w.a.full.private.key, set.connectionId, set.tokenId);
      await call('post', `/orchestration/transactions/${captured}/capture`, w.a.full.private.key, {}).expect(
        200,
      );
      fresh = { ...set, capturedTransactionId: captured };
    });

    /** Resources the control may consume, so that each operation meets a state it can succeed in. */
    async function refsFor(op: Operation): Promise<Refs> {
      const r: Refs = { ...w.a.refs, ...fresh };
      const admin = w.a.bootstrapKey;
      const pvt = w.a.full.private.key;
      switch (op.id) {
        case 'deleteApplication':
          r.applicationId = (
            await newApplication(t, admin, { type: 'private', permissions: ['token:read'] })
          ).id;
          break;
        case 'deleteApplicationKey':
          r.keyId = (await call('post', `/applications/${r.applicationId}/keys`, admin).expect(201)).body.id;
          break;
        case 'deleteToken':
          r.tokenId = await tokenize(pvt);
          break;
        case 'updateConnection':
        case 'updateConnectionByPost':
          r.connectionId = (await newConnection(t, pvt, { currencies: ['USD'], countries: ['US'] })).id;
          break;
        case 'deleteConnection':
          r.connectionId = (await newConnection(t, pvt, { wait: false })).id;
          break;
        case 'captureTransaction':
        case 'voidTransaction':
          r.transactionId = await pay(pvt, r.connectionId, r.tokenId);
          break;
        case 'createRefund':
        case 'listRefunds':
          r.transactionId = fresh.capturedTransactionId;
          break;
        case 'authorizeSession':
          r.nonce = (await call('post', '/sessions', w.a.full.public.key).expect(201)).body.nonce;
          break;
        case 'deleteProxy':
          r.proxyId = (
            await call('post', '/proxies', admin, {
              name: 'to delete',
              destination_url: PROXY_DESTINATION,
            }).expect(201)
          ).body.id;
          break;
        case 'deleteWebhook':
          r.webhookId = (await call('post', '/webhooks', admin, WEBHOOK_BODY).expect(201)).body.id;
          break;
        case 'deleteApplePayMerchantKey':
          r.appleKeyId = (await call('post', '/wallets/apple-pay/merchant-keys', admin).expect(201)).body.id;
          break;
        case 'deleteGooglePayMerchantKey':
          r.googleKeyId = (
            await call('post', '/wallets/google-pay/merchant-keys', admin, {
              gateway_merchant_id: 'to-delete',
            }).expect(201)
          ).body.id;
          break;
        case 'deleteBuyer':
        case 'deleteBuyerPaymentMethod':
          Object.assign(r, await storedCard(pvt));
          break;
      }
      return r;
    }

    for (const op of ALL_OPERATIONS) {
      const kind: Kind = op.kinds.includes('private') ? 'private' : op.kinds[0];
      it(`${op.route}: tenant A ${kind} key with every ${kind} permission → ${op.success}`, async () => {
        const r = await refsFor(op);
        const path = fillPath(op.path, r);
        const res = await call(op.method, path, w.a.full[kind].key, bodyFor(op.id, r));
        // Tenant A reading its own data: only keys, the card number and the connection secret must not show.
        verdict(op.route, `tenant A ${kind} key (control)`, res, op.success, path, { ids: new Map() });
      });
    }
  });
});
