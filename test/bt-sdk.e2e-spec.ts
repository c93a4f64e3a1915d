import { BasisTheory, BasisTheoryClient } from '@basis-theory/node-sdk';
import { newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import { freePort } from './support/processes';

/**
 * Drives the service with the official Basis Theory Node SDK (`@basis-theory/node-sdk`), over a real socket,
 * for the operations both share. Every assertion states what the SDK expects (its request and response
 * types and serializers); a failure here is a wire incompatibility of the service, not of the test.
 */

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };
const MASKED_CARD = { number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2030 };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TOKEN_PERMISSIONS = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search'];

/** The body of the last page a paginated SDK call fetched (`core.Page#response`, private in its typings). */
function pageBody<T>(page: object): T {
  return (page as unknown as { response: T }).response;
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe('Basis Theory Node SDK against the service', () => {
  let t: TestApp;
  let baseUrl: string;
  let tenant: TestTenant;
  let mgmt: BasisTheoryClient;
  let pvt: BasisTheoryClient;
  let pvtId: string;
  let pub: BasisTheoryClient;
  let pubId: string;

  /** No retries: a 5xx must fail the test at once rather than after the SDK's backoff. */
  const sdk = (apiKey: string) =>
    new BasisTheoryClient({ baseUrl, apiKey, maxRetries: 0, timeoutInSeconds: 10 });

  beforeAll(async () => {
    const port = await freePort();
    t = await startApp();
    await t.app.listen(port, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${port}`;
    tenant = await newTenant(t, 'sdk tenant');
    mgmt = sdk(tenant.managementKey);
    const pvtApp = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: TOKEN_PERMISSIONS,
    });
    pvt = sdk(pvtApp.key);
    pvtId = pvtApp.id;
    const pubApp = await newApplication(t, tenant.managementKey, {
      type: 'public',
      permissions: ['token:create'],
    });
    pub = sdk(pubApp.key);
    pubId = pubApp.id;
  });
  afterAll(() => t.close());

  describe('applications', () => {
    it('create returns the application with its key in clear, once', async () => {
      const created = await mgmt.applications.create({
        name: 'SDK backend',
        type: 'private',
        permissions: ['token:create', 'token:read'],
      });
      expect(created).toEqual({
        id: expect.stringMatching(UUID),
        tenantId: tenant.tenantId,
        name: 'SDK backend',
        type: 'private',
        permissions: ['token:create', 'token:read'],
        rules: [],
        key: expect.stringMatching(/^key_pvt_/),
        keys: [
          {
            id: expect.stringMatching(UUID),
            key: created.key,
            createdBy: tenant.managementApplicationId,
            createdAt: expect.any(Date),
          },
        ],
        createdBy: tenant.managementApplicationId,
        createdAt: expect.any(Date),
      });
      const self = await sdk(created.key!).applications.getByKey();
      expect(self.id).toBe(created.id);
      expect(self.key).toBeUndefined();
    });

    it('create sends rules and create_key', async () => {
      const rules: BasisTheory.AccessRule[] = [
        {
          description: 'cards',
          priority: 1,
          container: '/pci/',
          transform: 'mask',
          permissions: ['token:read'],
        },
      ];
      const created = await mgmt.applications.create({
        name: 'ruled',
        type: 'private',
        rules,
        createKey: false,
      });
      expect(created.key).toBeUndefined();
      expect(created.keys).toEqual([]);
      expect(created.permissions).toEqual([]);
      expect(created.rules).toEqual(rules);
    });

    it('get, update and delete', async () => {
      const app = await newApplication(t, tenant.managementKey, {
        type: 'public',
        permissions: ['token:create'],
      });

      const got = await mgmt.applications.get(app.id);
      expect(got).toMatchObject({ id: app.id, tenantId: tenant.tenantId, type: 'public' });
      expect(got.key).toBeUndefined();
      expect(got.keys).toEqual([
        { id: expect.any(String), createdBy: expect.any(String), createdAt: expect.any(Date) },
      ]);

      const updated = await mgmt.applications.update(app.id, {
        name: 'renamed',
        permissions: ['token:create', 'token:update'],
      });
      expect(updated).toMatchObject({
        id: app.id,
        name: 'renamed',
        permissions: ['token:create', 'token:update'],
        modifiedBy: tenant.managementApplicationId,
        modifiedAt: expect.any(Date),
      });

      await expect(mgmt.applications.delete(app.id)).resolves.toBeUndefined();
      await expect(mgmt.applications.get(app.id)).rejects.toBeInstanceOf(BasisTheory.NotFoundError);
      await expect(sdk(app.key).sessions.create()).rejects.toBeInstanceOf(BasisTheory.UnauthorizedError);
    });

    it('list pages by number (page, size) and filters by one type', async () => {
      const other = await newTenant(t, 'sdk list tenant');
      const client = sdk(other.managementKey);
      const a = await newApplication(t, other.managementKey, {
        type: 'private',
        permissions: ['token:read'],
      });
      const b = await newApplication(t, other.managementKey, {
        type: 'public',
        permissions: ['token:create'],
      });

      const first = await client.applications.list({ size: 2 });
      expect(first.data).toHaveLength(2);
      expect(pageBody<BasisTheory.ApplicationPaginatedList>(first).pagination).toEqual({
        totalItems: 3,
        pageNumber: 1,
        pageSize: 2,
        totalPages: 2,
        after: expect.any(String),
      });
      const all = await collect(await client.applications.list({ size: 2 }));
      expect(all.map((app) => app.id).sort()).toEqual([other.managementApplicationId, a.id, b.id].sort());

      const second = await client.applications.list({ page: 2, size: 2 });
      expect(second.data).toHaveLength(1);

      const publics = await client.applications.list({ type: 'public' });
      expect(publics.data.map((app) => app.id)).toEqual([b.id]);
    });

    it('list filters by id (ApplicationsListRequest.id, sent as repeated id=)', async () => {
      const a = await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:read'],
      });
      const b = await newApplication(t, tenant.managementKey, {
        type: 'public',
        permissions: ['token:create'],
      });
      const page = await mgmt.applications.list({ id: [a.id, b.id] });
      expect(page.data.map((app) => app.id).sort()).toEqual([a.id, b.id].sort());
      const one = await mgmt.applications.list({ id: a.id });
      expect(one.data.map((app) => app.id)).toEqual([a.id]);
    });

    it('list filters by several types (ApplicationsListRequest.type as an array, sent as repeated type=)', async () => {
      const page = await mgmt.applications.list({ type: ['public', 'management'] });
      const types = new Set(page.data.map((app) => app.type));
      expect([...types].sort()).toEqual(['management', 'public']);
    });

    it('list pages by cursor (ApplicationsListRequest.start from Pagination.after)', async () => {
      const first = await mgmt.applications.list({ size: 1 });
      const after = pageBody<BasisTheory.ApplicationPaginatedList>(first).pagination?.after;
      expect(after).toEqual(expect.any(String));
      const next = await mgmt.applications.list({ start: after, size: 1 });
      expect(next.data).toHaveLength(1);
      expect(next.data[0].id).not.toBe(first.data[0].id);
    });
  });

  describe('application keys', () => {
    it('list, create (rotation) and delete', async () => {
      const app = await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:read'],
      });
      const before = await mgmt.applicationKeys.list(app.id);
      expect(before).toEqual([
        { id: expect.stringMatching(UUID), createdBy: expect.any(String), createdAt: expect.any(Date) },
      ]);

      const created = await mgmt.applicationKeys.create(app.id);
      expect(created).toEqual({
        id: expect.stringMatching(UUID),
        key: expect.stringMatching(/^key_pvt_/),
        createdBy: tenant.managementApplicationId,
        createdAt: expect.any(Date),
      });
      expect((await sdk(created.key!).applications.getByKey()).id).toBe(app.id);
      const after = await mgmt.applicationKeys.list(app.id);
      expect(after.map((key) => key.id).sort()).toEqual([before[0].id, created.id].sort());
      expect(after.every((key) => key.key === undefined)).toBe(true);

      await expect(mgmt.applicationKeys.delete(app.id, created.id!)).resolves.toBeUndefined();
      await expect(sdk(created.key!).applications.getByKey()).rejects.toBeInstanceOf(
        BasisTheory.UnauthorizedError,
      );
      expect((await sdk(app.key).applications.getByKey()).id).toBe(app.id);
    });

    it('get one key (GET /applications/{id}/keys/{keyId})', async () => {
      const app = await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ['token:read'],
      });
      const [key] = await mgmt.applicationKeys.list(app.id);
      const got = await mgmt.applicationKeys.get(app.id, key.id!);
      expect(got).toEqual({
        id: key.id,
        createdBy: tenant.managementApplicationId,
        createdAt: expect.any(Date),
      });
      await expect(
        mgmt.applicationKeys.get(app.id, '00000000-0000-4000-8000-000000000000'),
      ).rejects.toBeInstanceOf(BasisTheory.NotFoundError);
    });
  });

  describe('tokens', () => {
    it('tokenize: a structure keeps its shape, a single element comes back with its mask', async () => {
      const res = (await pvt.tokens.tokenize({
        card: { type: 'card', data: CARD },
        email: 'jane@example.com',
      })) as {
        card: { id: string; type: string; data: unknown; containers: string[] };
        email: string;
      };
      expect(res.email).toMatch(UUID);
      expect(res.card).toMatchObject({ type: 'card', data: MASKED_CARD, containers: ['/pci/high/'] });

      const single = (await pvt.tokens.tokenize({ type: 'card', data: CARD })) as Record<string, unknown>;
      expect(single).toMatchObject({ type: 'card', mask: MASKED_CARD, created_by: pvtId });
      expect(JSON.stringify(single)).not.toContain(CARD.number);
    });

    it('tokenize honours the SDK idempotency key and echoes its correlation id', async () => {
      const call = () =>
        pvt.tokens
          .tokenize(
            { type: 'token', data: 'once' },
            { idempotencyKey: 'sdk-idem-1', correlationId: 'sdk-trace-1' },
          )
          .withRawResponse();
      const first = await call();
      const again = await call();
      expect((again.data as { id: string }).id).toBe((first.data as { id: string }).id);
      expect(again.rawResponse.headers.get('bt-idempotency-replayed')).toBe('true');
      expect(first.rawResponse.headers.get('bt-trace-id')).toBe('sdk-trace-1');
    });

    it('create, get, update and delete', async () => {
      const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
      const created = await pvt.tokens.create({
        type: 'card',
        data: CARD,
        metadata: { customer: 'c_42' },
        searchIndexes: ['{{ data.number | last4 }}'],
        fingerprintExpression: '{{ data.number }}',
        containers: ['/pci/high/'],
        deduplicateToken: false,
        expiresAt,
      });
      expect(created).toEqual({
        id: expect.stringMatching(UUID),
        tenantId: tenant.tenantId,
        type: 'card',
        mask: MASKED_CARD,
        // The SDK reads enrichments (camel-cased) as Basis Theory's own API sends them.
        enrichments: { cardDetails: { bin: '424242', last4: '4242', brand: 'visa' } },
        metadata: { customer: 'c_42' },
        searchIndexes: ['{{ data.number | last4 }}'],
        fingerprint: expect.any(String),
        fingerprintExpression: '{{ data.number }}',
        containers: ['/pci/high/'],
        expiresAt: new Date(expiresAt),
        createdBy: pvtId,
        createdAt: expect.any(Date),
      });

      const got = await pvt.tokens.get(created.id!);
      expect(got).toEqual(created);

      const later = new Date(Date.now() + 7_200_000).toISOString();
      const updated = await pvt.tokens.update(created.id!, { metadata: { order: 'o_7' }, expiresAt: later });
      expect(updated).toMatchObject({
        id: created.id,
        metadata: { customer: 'c_42', order: 'o_7' },
        expiresAt: new Date(later),
        modifiedBy: pvtId,
        modifiedAt: expect.any(Date),
      });

      await expect(pvt.tokens.delete(created.id!)).resolves.toBeUndefined();
      await expect(pvt.tokens.get(created.id!)).rejects.toBeInstanceOf(BasisTheory.NotFoundError);
    });

    it('create with a client id (CreateTokenRequest.id) in the root container, then get, update, delete by it', async () => {
      const id = `sdk_Order-${Date.now()}`;
      const created = await pvt.tokens.create({ id, type: 'token', data: 'root data', containers: ['/'] });
      expect(created).toMatchObject({ id, type: 'token', containers: ['/'], createdBy: pvtId });
      expect(await pvt.tokens.get(id)).toEqual(created);
      const updated = await pvt.tokens.update(id, { metadata: { k: 'v' } });
      expect(updated).toMatchObject({ id, metadata: { k: 'v' }, containers: ['/'] });
      const taken = await pvt.tokens.create({ id, type: 'token', data: 'again' }).catch((e: unknown) => e);
      expect(taken).toBeInstanceOf(BasisTheory.ConflictError);
      const bad = await pvt.tokens
        .create({ id: 'not/valid', type: 'token', data: 'x' })
        .catch((e: unknown) => e);
      expect(bad).toBeInstanceOf(BasisTheory.BadRequestError);
      expect((bad as BasisTheory.BadRequestError).body).toMatchObject({
        errors: { id: [expect.any(String)] },
      });
      await pvt.tokens.delete(id);
      await expect(pvt.tokens.get(id)).rejects.toBeInstanceOf(BasisTheory.NotFoundError);
      await expect(pvt.tokens.get('no-such_token')).rejects.toBeInstanceOf(BasisTheory.NotFoundError);
    });

    it('errors come back as the SDK error classes with problem details', async () => {
      const bad = await pvt.tokens
        .tokenize({ type: 'card', data: { ...CARD, number: '4242424242424241' } })
        .catch((e: unknown) => e);
      expect(bad).toBeInstanceOf(BasisTheory.BadRequestError);
      expect((bad as BasisTheory.BadRequestError).statusCode).toBe(400);
      expect((bad as BasisTheory.BadRequestError).body).toMatchObject({
        status: 400,
        errors: { 'data.number': [expect.any(String)] },
      });
      await expect(
        sdk('key_pvt_unknown').tokens.get('00000000-0000-4000-8000-000000000000'),
      ).rejects.toBeInstanceOf(BasisTheory.UnauthorizedError);
      await expect(pvt.applications.list()).rejects.toBeInstanceOf(BasisTheory.ForbiddenError);
    });
  });

  describe('token list and search (the SDK 5.x only has the v2, cursor-paginated routes)', () => {
    let lister: BasisTheoryClient;
    let cards: string[];
    let tagged: string;

    beforeAll(async () => {
      const own = await newTenant(t, 'sdk token list tenant');
      lister = sdk(
        (await newApplication(t, own.managementKey, { type: 'private', permissions: TOKEN_PERMISSIONS })).key,
      );
      cards = [];
      for (let i = 0; i < 3; i++) cards.push((await lister.tokens.create({ type: 'card', data: CARD })).id!);
      tagged = (await lister.tokens.create({ type: 'token', data: 'x', metadata: { k: 'v' } })).id!;
    });

    it('tokens.listV2 (GET /v2/tokens) pages with pagination.next', async () => {
      const first = await lister.tokens.listV2({ type: 'card', size: 2 });
      expect(first.data).toHaveLength(2);
      expect(pageBody<BasisTheory.TokenCursorPaginatedList>(first).pagination).toEqual({
        pageSize: 2,
        next: expect.any(String),
      });
      const all = await collect(await lister.tokens.listV2({ type: 'card', size: 2 }));
      expect(all.map((token) => token.id).sort()).toEqual([...cards].sort());
    });

    it('tokens.listV2 filters by metadata (sent as metadata=<JSON object>)', async () => {
      const page = await lister.tokens.listV2({ metadata: { k: 'v' } });
      expect(page.data.map((token) => token.id)).toEqual([tagged]);
    });

    it('tokens.listV2 pages across client ids; container / covers every container', async () => {
      const ids = ['sdk-a', 'sdk_B', `sdk-${'c'.repeat(396)}`];
      for (const id of ids) await lister.tokens.create({ id, type: 'token', data: id, containers: ['/'] });
      const all = await collect(await lister.tokens.listV2({ container: '/', size: 2 }));
      expect(all.map((token) => token.id).sort()).toEqual([...cards, tagged, ...ids].sort());
      const general = await collect(await lister.tokens.listV2({ container: '/general/', size: 2 }));
      expect(general.map((token) => token.id)).toEqual([tagged]);
    });

    it('tokens.searchV2 (POST /v2/tokens/search) pages with pagination.next', async () => {
      const all = await collect(await lister.tokens.searchV2({ query: 'type:card', size: 2 }));
      expect(all.map((token) => token.id).sort()).toEqual([...cards].sort());
    });

    it('tokens.searchV2 takes the Lucene-style query (AND, OR, NOT, quotes, ranges) and pages through it', async () => {
      // The SDK 5.x has no v1 search (POST /tokens/search): searchV2 is its only search call.
      const first = await lister.tokens.searchV2({ query: 'type:card AND NOT metadata.k:"v"', size: 2 });
      expect(first.data).toHaveLength(2);
      expect(pageBody<BasisTheory.TokenCursorPaginatedList>(first).pagination?.next).toEqual(
        expect.any(String),
      );
      const cardsOnly = await collect(
        await lister.tokens.searchV2({ query: 'type:card AND NOT metadata.k:"v"', size: 2 }),
      );
      expect(cardsOnly.map((token) => token.id).sort()).toEqual([...cards].sort());
      const either = await collect(
        await lister.tokens.searchV2({
          query: `(type:card OR metadata.k:v) AND created_at:[2020-01-01 TO *] AND -id:${cards[0]}`,
          size: 1,
        }),
      );
      expect(either.map((token) => token.id).sort()).toEqual([...cards.slice(1), tagged].sort());
      await expect(lister.tokens.searchV2({ query: '(type:card' })).rejects.toMatchObject({
        statusCode: 400,
        body: { errors: { query: [expect.stringContaining('at character 11')] } },
      });
    });
  });

  describe('sessions', () => {
    it('a public key creates a session, a private key authorizes it, the session key tokenizes', async () => {
      const session = await pub.sessions.create();
      expect(session).toEqual({
        sessionKey: expect.stringMatching(/^key_ses_/),
        nonce: expect.any(String),
        expiresAt: expect.any(Date),
      });
      const ses = sdk(session.sessionKey!);
      await expect(ses.tokens.tokenize({ type: 'token', data: 'early' })).rejects.toBeInstanceOf(
        BasisTheory.ForbiddenError,
      );

      await expect(
        pvt.sessions.authorize({
          nonce: session.nonce!,
          permissions: ['token:create'],
          expiresAt: new Date(Date.now() + 60_000).toISOString(),
        }),
      ).resolves.toBeUndefined();

      const token = (await ses.tokens.tokenize({ type: 'token', data: 'through a session' })) as Record<
        string,
        unknown
      >;
      expect(token).toMatchObject({ id: expect.stringMatching(UUID), type: 'token', created_by: pubId });
      await expect(
        pvt.sessions.authorize({ nonce: session.nonce!, permissions: ['token:read'] }),
      ).rejects.toBeInstanceOf(BasisTheory.BadRequestError);
    });

    it('authorize with a rule and conditions grants read on one token only', async () => {
      const mine = await pvt.tokens.create({ type: 'card', data: CARD });
      const other = await pvt.tokens.create({ type: 'card', data: CARD });
      const session = await pub.sessions.create();
      await pvt.sessions.authorize({
        nonce: session.nonce!,
        rules: [
          {
            priority: 1,
            conditions: [{ attribute: 'id', operator: 'equals', value: mine.id! }],
            permissions: ['token:read'],
            transform: 'mask',
          },
        ],
      });
      const ses = sdk(session.sessionKey!);
      expect((await ses.tokens.get(mine.id!)).mask).toEqual(MASKED_CARD);
      const refused = await ses.tokens.get(other.id!).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(Error);
      expect([403, 404]).toContain((refused as BasisTheory.NotFoundError).statusCode);
    });

    it('sessions.create with a private key is refused', async () => {
      await expect(pvt.sessions.create()).rejects.toBeInstanceOf(BasisTheory.ForbiddenError);
    });
  });

  describe('logs, permissions, tenant', () => {
    it('logs.list filters by entity type, entity id and dates', async () => {
      const startDate = new Date(Date.now() - 1000);
      const token = await pvt.tokens.create({ type: 'token', data: 'logged' });
      await pvt.tokens.get(token.id!);
      const page = await mgmt.logs.list({
        entityType: 'token',
        entityId: token.id,
        startDate,
        endDate: new Date(Date.now() + 60_000),
      });
      expect(page.data.map((log) => log.operation)).toEqual(['read', 'create']);
      expect(page.data[1]).toEqual({
        id: expect.stringMatching(UUID),
        tenantId: tenant.tenantId,
        actorId: pvtId,
        actorType: 'application',
        entityType: 'token',
        entityId: token.id,
        operation: 'create',
        message: expect.any(String),
        createdAt: expect.any(Date),
      });
      const none = await mgmt.logs.list({ entityId: token.id, endDate: startDate });
      expect(none.data).toEqual([]);
    });

    it('logs.list iterates page by page (page, size) and pages by cursor (start)', async () => {
      const own = await newTenant(t, 'sdk log tenant');
      const client = sdk(own.managementKey);
      for (let i = 0; i < 3; i++) await client.applications.create({ name: `log ${i}`, type: 'public' });
      const everything = (await client.logs.list({ size: 100 })).data.map((log) => log.id);
      expect(everything.length).toBeGreaterThanOrEqual(5);

      const iterated = await collect(await client.logs.list({ size: 2 }));
      expect(iterated.map((log) => log.id)).toEqual(everything);

      const first = await client.logs.list({ size: 2 });
      const after = pageBody<BasisTheory.LogPaginatedList>(first).pagination?.after;
      expect(after).toEqual(expect.any(String));
      const second = await client.logs.list({ size: 2, start: after });
      expect(second.data.map((log) => log.id)).toEqual(everything.slice(2, 4));
    });

    it('logs.getEntityTypes', async () => {
      expect(await mgmt.logs.getEntityTypes()).toEqual([
        { displayName: 'Token', value: 'token' },
        { displayName: 'Card', value: 'card' },
        { displayName: 'Bank', value: 'bank' },
        { displayName: 'Network token', value: 'network_token' },
        { displayName: 'Application', value: 'application' },
        { displayName: 'Tenant', value: 'tenant' },
        { displayName: 'Session', value: 'session' },
        { displayName: 'Connection', value: 'connection' },
        { displayName: 'Transaction', value: 'transaction' },
        { displayName: 'Proxy', value: 'proxy' },
        { displayName: 'Webhook', value: 'webhook' },
        { displayName: 'Flow rule', value: 'flow_rule' },
        { displayName: 'Buyer', value: 'buyer' },
        { displayName: 'Wallet merchant key', value: 'wallet_key' },
        { displayName: 'Relay refund', value: 'relay_refund' },
        { displayName: 'Token import', value: 'token_import' },
      ]);
    });

    it('permissions.list, all and by application type', async () => {
      const publics = await mgmt.permissions.list({ applicationType: 'public' });
      expect(publics.map((p) => p.type)).toEqual(['token:create', 'token:update']);
      expect(publics[0]).toEqual({
        type: 'token:create',
        description: expect.any(String),
        applicationTypes: ['public', 'private'],
      });
      const all = await pvt.permissions.list();
      expect(all.find((p) => p.type === 'log:read')?.applicationTypes).toEqual(['management']);
    });

    it('applications.getByKey and tenants.self.get', async () => {
      expect((await pvt.applications.getByKey()).id).toBe(pvtId);
      expect(await mgmt.tenants.self.get()).toMatchObject({
        id: tenant.tenantId,
        name: 'sdk tenant',
        createdAt: expect.any(Date),
      });
    });
  });

  describe('proxies (pre-configured)', () => {
    it('create, get, list, update, patch and delete', async () => {
      const created = await mgmt.proxies.create({
        name: 'SDK processor',
        destinationUrl: 'https://processor.example/v1',
        requireAuth: true,
      });
      expect(created).toEqual({
        id: expect.stringMatching(UUID),
        key: expect.stringMatching(/^key_prx_/),
        tenantId: tenant.tenantId,
        name: 'SDK processor',
        destinationUrl: 'https://processor.example/v1',
        requireAuth: true,
        createdBy: tenant.managementApplicationId,
        createdAt: expect.any(Date),
        // The SDK reads the null modified_by and modified_at as absent.
      });
      const id = created.id!;
      expect(await mgmt.proxies.get(id)).toEqual(created);

      const page = await mgmt.proxies.list({ name: 'sdk', size: 10 });
      expect(page.data.map((p) => p.id)).toEqual([id]);
      expect(pageBody<{ pagination: object }>(page).pagination).toEqual({
        totalItems: 1,
        pageNumber: 1,
        pageSize: 10,
        totalPages: 1,
      });
      expect((await collect(await mgmt.proxies.list({ id }))).map((p) => p.id)).toEqual([id]);

      const updated = await mgmt.proxies.update(id, {
        name: 'SDK processor v2',
        destinationUrl: 'https://processor.example/v2',
        requireAuth: false,
      });
      expect(updated).toMatchObject({
        id,
        key: created.key,
        name: 'SDK processor v2',
        destinationUrl: 'https://processor.example/v2',
        requireAuth: false,
        modifiedBy: tenant.managementApplicationId,
        modifiedAt: expect.any(Date),
      });
      await mgmt.proxies.patch(id, { requireAuth: true });
      expect(await mgmt.proxies.get(id)).toMatchObject({ name: 'SDK processor v2', requireAuth: true });

      await mgmt.proxies.delete(id);
      await expect(mgmt.proxies.get(id)).rejects.toBeInstanceOf(BasisTheory.NotFoundError);
    });

    it('a private key may not manage proxies; a refused destination is a 400', async () => {
      await expect(
        pvt.proxies.create({ name: 'x', destinationUrl: 'https://processor.example/' }),
      ).rejects.toBeInstanceOf(BasisTheory.ForbiddenError);
      await expect(
        mgmt.proxies.create({ name: 'x', destinationUrl: 'http://169.254.169.254/latest' }),
      ).rejects.toBeInstanceOf(BasisTheory.BadRequestError);
    });
  });

  describe('webhooks', () => {
    it('create (the secret once), get, list, update and delete', async () => {
      const created = await mgmt.webhooks.create({
        name: 'SDK webhook',
        url: 'https://receiver.example/sdk',
        notifyEmail: 'ops@merchant.example',
        events: ['token:created', 'transaction:updated'],
      });
      expect(created).toEqual({
        id: expect.stringMatching(UUID),
        tenantId: tenant.tenantId,
        status: 'enabled',
        name: 'SDK webhook',
        url: 'https://receiver.example/sdk',
        notifyEmail: 'ops@merchant.example',
        events: ['token:created', 'transaction:updated'],
        createdBy: tenant.managementApplicationId,
        createdAt: expect.any(Date),
        // Not in the SDK's Webhook type: its serializer passes unknown keys through.
        secret: expect.stringMatching(/^whsec_/),
      });
      const { secret, ...shown } = created as typeof created & { secret: string };
      expect(secret).toBeDefined();
      const id = created.id;
      expect(await mgmt.webhooks.get(id)).toEqual(shown);

      const list = await mgmt.webhooks.list();
      expect(list).toEqual({ pagination: { pageSize: 20 }, data: [shown] });

      const updated = await mgmt.webhooks.update(id, {
        name: 'SDK webhook v2',
        url: 'https://receiver.example/sdk/v2',
        events: ['application:created'],
      });
      expect(updated).toEqual({
        ...shown,
        name: 'SDK webhook v2',
        url: 'https://receiver.example/sdk/v2',
        events: ['application:created'],
        modifiedBy: tenant.managementApplicationId,
        modifiedAt: expect.any(Date),
      });
      expect(updated).not.toHaveProperty('secret');

      await mgmt.webhooks.delete(id);
      await expect(mgmt.webhooks.get(id)).rejects.toBeInstanceOf(BasisTheory.NotFoundError);
    });

    it('events.list (GET /webhooks/event-types) and ping', async () => {
      expect(await mgmt.webhooks.events.list()).toEqual([
        'token:created',
        'token:updated',
        'token:deleted',
        'transaction:created',
        'transaction:updated',
        'connection:updated',
        'buyer:created',
        'buyer:updated',
        'buyer:deleted',
        'relay:refund:created',
        'relay:refund:succeeded',
        'relay:refund:failed',
        'application:created',
        'application:updated',
        'application:deleted',
        'audit:checkpoint',
      ]);
      await expect(mgmt.webhooks.ping()).resolves.toBeUndefined();
      await expect(pub.webhooks.ping()).resolves.toBeUndefined();
      // The SDK maps no status to an error class for ping: a 401 is its generic error.
      await expect(sdk('key_nope').webhooks.ping()).rejects.toMatchObject({ statusCode: 401 });
    });

    it('a private key may not manage webhooks; a refused url or unknown event type is a 400', async () => {
      await expect(
        pvt.webhooks.create({ name: 'x', url: 'https://receiver.example/', events: ['token:created'] }),
      ).rejects.toBeInstanceOf(BasisTheory.ForbiddenError);
      await expect(pvt.webhooks.events.list()).rejects.toBeInstanceOf(BasisTheory.ForbiddenError);
      await expect(
        mgmt.webhooks.create({ name: 'x', url: 'http://169.254.169.254/', events: ['token:created'] }),
      ).rejects.toBeInstanceOf(BasisTheory.BadRequestError);
      await expect(
        mgmt.webhooks.create({ name: 'x', url: 'https://receiver.example/', events: ['token:exploded'] }),
      ).rejects.toBeInstanceOf(BasisTheory.BadRequestError);
    });
  });
});
