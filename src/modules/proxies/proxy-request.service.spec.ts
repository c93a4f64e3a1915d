import { randomUUID } from 'node:crypto';
import { tokensOn } from '../../../test/support/service-stacks';
import { StoppedClock } from '../../../test/support/stopped-clock';
import {
  openServiceDatabase,
  principalOf,
  type ServiceDatabase,
} from '../../../test/support/service-database';
import { ApiKeyAuthenticator } from '../../common/auth/api-key.guard';
import type { Principal, RequestWithPrincipal } from '../../common/auth/principal';
import { PrincipalResolvers } from '../../common/auth/principal-resolver';
import type { OutboundHttp } from '../../common/outbound/outbound-http.service';
import {
  OutboundError,
  type OutboundRequest,
  type OutboundResponse,
} from '../../common/outbound/outbound.types';
import { rateLimited, type RateLimiter } from '../../common/throttling/rate-limiter';
import type { AppConfig } from '../../config/app-config';
import type { ProxyEntity } from './entities/proxy.entity';
import { ProxiesErrorCode } from './proxies.errors';
import { ProxiesRepository } from './proxies.repository';
import { ProxyRequestService, type ProxiedRequest } from './proxy-request.service';

/**
 * The detokenizing proxy on the real SQL (tokens, proxies, audit rows), its outbound component faked
 * (OutboundHttp has a spec of its own): a request is routed by BT-PROXY-URL or BT-PROXY-KEY, its token
 * expressions replaced by the data the caller may use, sent as the destination should get it, and its
 * `use` recorded; refusals come before anything is sent.
 */
let db: ServiceDatabase;
const clock = new StoppedClock();
let service: ProxyRequestService;
let tenant: string;
let otherTenant: string;
const keys = new Map<string, Principal>();
let sent: OutboundRequest[];
let reply: () => Promise<OutboundResponse>;
let consumed: string[];
let limited: boolean;

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' };
/** Under the 4 KiB a fingerprint may take; five of them are over the 16 KiB a header value may take. */
const BIG = 'x'.repeat(3500);

/** A key of `kind` resolving to this principal. */
function key(who: Principal): string {
  const made = `key_${who.keyKind === 'session' ? 'ses' : who.keyKind === 'public' ? 'pub' : 'pvt'}_${randomUUID().replace(/-/g, '')}abcdefghijk`;
  keys.set(made, who);
  return made;
}

let privateKey: string;
let theirKey: string;
let openProxy: ProxyEntity;
let closedProxy: ProxyEntity;

beforeAll(async () => {
  db = await openServiceDatabase();
  const { tokenizer, tokens } = tokensOn(db, clock);
  const config = { AUTH_FAILURES_PER_MINUTE: 2 } as AppConfig;
  const resolvers = new PrincipalResolvers();
  resolvers.register(['public', 'private', 'management', 'session'], {
    resolve: (given: string) => Promise.resolve(keys.get(given)),
  });
  const outbound = {
    send: (request: OutboundRequest) => {
      sent.push(request);
      return reply();
    },
  } as unknown as OutboundHttp;
  const limits = {
    consume: async (proxyKey: string) => {
      consumed.push(proxyKey);
      if (limited) throw rateLimited(1, 30);
    },
  } as unknown as RateLimiter;
  service = new ProxyRequestService(
    new ProxiesRepository(db.dataSource),
    new ApiKeyAuthenticator(resolvers, clock, config),
    limits,
    tokens,
    outbound,
    db.work,
  );

  tenant = await db.newTenant('mine');
  otherTenant = await db.newTenant('other');
  const owner = principalOf(tenant, ['token:create']);
  await tokenizer.createOne({ actor: owner }, { id: 'card_1', type: 'card', data: CARD });
  await tokenizer.createOne({ actor: owner }, { id: 'email_1', type: 'token', data: 'jane@example.com' });
  await tokenizer.createOne(
    { actor: owner },
    { id: 'secret_1', type: 'token', data: 'hidden', containers: ['/secret/'] },
  );
  await tokenizer.createOne({ actor: owner }, { id: 'big_1', type: 'token', data: BIG });
  await tokenizer.createOne(
    { actor: principalOf(otherTenant, ['token:create']) },
    { id: 'theirs_1', type: 'token', data: 'theirs' },
  );
  // The caller may use every token but those in /secret/.
  privateKey = key({
    ...principalOf(tenant),
    rules: [
      { priority: 1, container: '/secret/', permissions: [] },
      { priority: 2, container: '/', permissions: ['token:use'] },
    ],
  });
  theirKey = key(principalOf(otherTenant, ['token:use']));
  openProxy = await proxy(false);
  closedProxy = await proxy(true);
});
afterAll(() => db.close());
beforeEach(() => {
  sent = [];
  consumed = [];
  limited = false;
  reply = async () => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: Buffer.from('{"ok":true}'),
  });
});

/** A pre-configured proxy of the tenant to https://psp.example/base. */
async function proxy(requireAuth: boolean): Promise<ProxyEntity> {
  const entity: ProxyEntity = {
    tenantId: tenant,
    id: randomUUID(),
    key: `key_prx_${randomUUID().replace(/-/g, '')}abcdefghijkl`,
    name: requireAuth ? 'closed' : 'open',
    destinationUrl: 'https://psp.example/base',
    requireAuth,
    createdBy: null,
    createdAt: clock.now(),
    modifiedBy: null,
    modifiedAt: null,
  };
  await db.work.transaction({}, (change) => new ProxiesRepository(db.dataSource).insert(change, entity));
  return entity;
}

/**
 * The request as the proxy route hands it over: the guards (public route, key optional) have
 * authenticated a BT-API-KEY given, and left its principal on the request.
 */
function request(
  headers: Record<string, string>,
  over: Partial<Omit<ProxiedRequest, 'headers' | 'http'>> = {},
): ProxiedRequest {
  const lower = Object.fromEntries(Object.entries(headers).map(([n, v]) => [n.toLowerCase(), v]));
  const principal = lower['bt-api-key'] === undefined ? undefined : keys.get(lower['bt-api-key']);
  return {
    method: 'post',
    path: '',
    query: '',
    headers: lower,
    ...over,
    http: {
      headers: lower,
      principal,
      socket: { remoteAddress: '198.51.100.7' },
    } as unknown as RequestWithPrincipal,
  };
}
const json = (body: unknown) => Buffer.from(JSON.stringify(body));
const useRows = () =>
  db.rows<{ actor_id: string | null; actor_type: string; entity_id: string; message: string }>(
    "SELECT actor_id, actor_type, entity_id, message FROM audit_logs WHERE operation = 'use' ORDER BY pos",
  );
/** The code of the refusal a forward ends with. */
const codeOf = (call: Promise<unknown>) =>
  call.then(
    () => undefined,
    (error: { code?: string; status?: number; getStatus?: () => number }) =>
      error.code ?? error.getStatus?.(),
  );

describe('BT-PROXY-URL', () => {
  it('replaces the expressions by the data the key may use, and sends the request on', async () => {
    const before = (await useRows()).length;
    const answer = await service.forward(
      request(
        {
          'BT-API-KEY': privateKey,
          'BT-PROXY-URL': 'https://psp.example/v1',
          'Content-Type': 'application/json',
          'X-Email': '{{ email_1 }}',
          Connection: 'x-drop',
          'X-Drop': 'hop',
          Host: 'vault.example',
        },
        {
          path: '/charges',
          query: 'email={{ email_1 }}&fixed=1',
          body: json({ number: "{{ card_1 | json: '$.number' }}", card: '{{ card_1 }}', note: 'plain' }),
        },
      ),
    );
    expect(answer).toEqual({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from('{"ok":true}'),
    });
    expect(sent).toHaveLength(1);
    const out = sent[0];
    expect(out).toMatchObject({
      method: 'POST',
      url: 'https://psp.example/v1/charges?email=jane%40example.com&fixed=1',
    });
    expect(out.headers).toEqual({ 'content-type': 'application/json', 'x-email': 'jane@example.com' });
    expect(JSON.parse(out.body!.toString())).toEqual({ number: CARD.number, card: CARD, note: 'plain' });
    const rows = (await useRows()).slice(before);
    expect(rows).toEqual([
      {
        actor_id: keys.get(privateKey)!.applicationId,
        actor_type: 'application',
        entity_id: keys.get(privateKey)!.applicationId,
        message: 'POST to psp.example answered 200',
      },
    ]);
    expect(JSON.stringify(rows)).not.toContain(CARD.number);
  });

  it('replaces expressions in a body that is not JSON too, byte for byte around them', async () => {
    await service.forward(
      request(
        { 'BT-API-KEY': privateKey, 'BT-PROXY-URL': 'https://psp.example/', 'Content-Type': 'text/plain' },
        { body: Buffer.from('to={{ email_1 }};n=1') },
      ),
    );
    expect(sent[0].body!.toString()).toBe('to=jane@example.com;n=1');
  });

  it('refuses, sending nothing, a token the key may not use, or of another tenant, naming the expression', async () => {
    for (const id of ['secret_1', 'theirs_1', 'missing_1']) {
      const refused = service.forward(
        request({
          'BT-API-KEY': privateKey,
          'BT-PROXY-URL': 'https://psp.example/',
          'X-Token': `{{ ${id} }}`,
        }),
      );
      await expect(refused).rejects.toMatchObject({
        code: ProxiesErrorCode.Invalid,
        errors: { [`{{ ${id} }}`]: ['names a token that does not exist or that the key may not use'] },
      });
    }
    // The other tenant's key uses its own token, and cannot use this tenant's.
    await service.forward(
      request({
        'BT-API-KEY': theirKey,
        'BT-PROXY-URL': 'https://psp.example/',
        'X-Token': '{{ theirs_1 }}',
      }),
    );
    expect(sent.map((r) => r.headers['x-token'])).toEqual(['theirs']);
    expect(
      await codeOf(
        service.forward(
          request({
            'BT-API-KEY': theirKey,
            'BT-PROXY-URL': 'https://psp.example/',
            'X-Token': '{{ email_1 }}',
          }),
        ),
      ),
    ).toBe(ProxiesErrorCode.Invalid);
    expect(sent).toHaveLength(1);
  });

  it('refuses a request too large once detokenized, before sending', async () => {
    const refused = service.forward(
      request({
        'BT-API-KEY': privateKey,
        'BT-PROXY-URL': 'https://psp.example/',
        'X-Big': '{{ big_1 }}'.repeat(5),
      }),
    );
    await expect(refused).rejects.toMatchObject({
      code: ProxiesErrorCode.RequestTooLarge,
      errors: { 'x-big': expect.any(Array) },
    });
    expect(sent).toEqual([]);
  });

  it('refuses a key that is not a private or authorized session key, and a request without one', async () => {
    const publicKey = key({
      ...principalOf(tenant, ['token:use']),
      keyKind: 'public',
      applicationType: 'public',
    });
    const pending = key({
      ...principalOf(tenant, ['token:use']),
      keyKind: 'session',
      sessionId: randomUUID(),
      authorized: false,
    });
    for (const given of [publicKey, pending])
      expect(
        await codeOf(
          service.forward(request({ 'BT-API-KEY': given, 'BT-PROXY-URL': 'https://psp.example/' })),
        ),
      ).toBe(ProxiesErrorCode.Forbidden);
    expect(await codeOf(service.forward(request({ 'BT-PROXY-URL': 'https://psp.example/' })))).toBe(401);
    expect(sent).toEqual([]);
  });

  it('refuses a malformed route: both headers, neither, a URL that is not http(s), a path leaving the destination', async () => {
    const base = { 'BT-API-KEY': privateKey };
    for (const headers of [
      { ...base, 'BT-PROXY-URL': 'https://psp.example/', 'BT-PROXY-KEY': openProxy.key },
      base,
      { ...base, 'BT-PROXY-URL': 'ftp://psp.example/' },
      { ...base, 'BT-PROXY-URL': 'psp.example' },
    ])
      expect(await codeOf(service.forward(request(headers)))).toBe(ProxiesErrorCode.Invalid);
    expect(
      await codeOf(
        service.forward(
          request({ ...base, 'BT-PROXY-URL': 'https://psp.example/v1' }, { path: '/%2e%2e/admin' }),
        ),
      ),
    ).toBe(ProxiesErrorCode.Invalid);
    expect(sent).toEqual([]);
  });

  it("answers the destination's failure as the proxy's, and records the use all the same", async () => {
    const before = (await useRows()).length;
    reply = () =>
      Promise.reject(new OutboundError('timeout', 'the destination did not answer within 30000 ms'));
    expect(
      await codeOf(
        service.forward(request({ 'BT-API-KEY': privateKey, 'BT-PROXY-URL': 'https://psp.example/' })),
      ),
    ).toBe(ProxiesErrorCode.Timeout);
    reply = () => Promise.reject(new OutboundError('destination_not_allowed', 'refused'));
    expect(
      await codeOf(
        service.forward(request({ 'BT-API-KEY': privateKey, 'BT-PROXY-URL': 'https://10.0.0.1/' })),
      ),
    ).toBe(ProxiesErrorCode.DestinationNotAllowed);
    expect((await useRows()).slice(before).map((r) => r.message)).toEqual([
      'POST to psp.example failed: timeout',
      'POST to 10.0.0.1 failed: destination_not_allowed',
    ]);
  });
});

describe('BT-PROXY-KEY', () => {
  it('sends a proxy without require_auth on anonymously, expressions untouched, counted against its key', async () => {
    const before = (await useRows()).length;
    await service.forward(
      request({ 'BT-PROXY-KEY': openProxy.key, 'X-Card': '{{ card_1 }}' }, { path: '/pay', method: 'get' }),
    );
    expect(sent[0]).toMatchObject({
      method: 'GET',
      url: 'https://psp.example/base/pay',
      headers: { 'x-card': '{{ card_1 }}' },
    });
    expect(consumed).toEqual([openProxy.key]);
    expect((await useRows()).slice(before)).toEqual([
      {
        actor_id: null,
        actor_type: 'anonymous',
        entity_id: openProxy.id,
        message: 'GET to psp.example answered 200',
      },
    ]);
  });

  it("refuses an anonymous request past the proxy key's rate limit, sending nothing", async () => {
    limited = true;
    expect(await codeOf(service.forward(request({ 'BT-PROXY-KEY': openProxy.key })))).toBe(429);
    expect(sent).toEqual([]);
  });

  it("needs a key of the proxy's tenant for a proxy with require_auth: another tenant learns nothing of it", async () => {
    expect(await codeOf(service.forward(request({ 'BT-PROXY-KEY': closedProxy.key })))).toBe(401);
    expect(
      await codeOf(service.forward(request({ 'BT-PROXY-KEY': closedProxy.key, 'BT-API-KEY': theirKey }))),
    ).toBe(ProxiesErrorCode.NotFound);
    await service.forward(
      request({ 'BT-PROXY-KEY': closedProxy.key, 'BT-API-KEY': privateKey, 'X-Email': '{{ email_1 }}' }),
    );
    expect(sent.map((r) => r.headers['x-email'])).toEqual(['jane@example.com']);
    // Only the request without a key counted against the proxy key: one with a key was counted by the guards.
    expect(consumed).toEqual([closedProxy.key]);
  });

  it('counts an unknown proxy key without BT-API-KEY as a failed authentication (429 past the limit)', async () => {
    const unknown = `key_prx_${'a'.repeat(44)}`;
    const codes = [];
    for (let i = 0; i < 3; i++)
      codes.push(await codeOf(service.forward(request({ 'BT-PROXY-KEY': unknown }))));
    expect(codes).toEqual([ProxiesErrorCode.NotFound, ProxiesErrorCode.NotFound, 429]);
    expect(sent).toEqual([]);
  });
});
