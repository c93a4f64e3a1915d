import { execFileSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { EVENT_TYPES } from '../src/common/events/event-outbox';
import { newTenant, startApp, TestApp, TestTenant } from './support/app';
import { ORCHESTRATION_PERMISSIONS } from './support/orchestration';
import { createDatabase, dropDatabase } from './support/test-database';
import { luhnCard } from './support/attacker';
import { encryptTo } from './support/card-files';
import { Destination } from './support/destination';
import { payload, Receiver } from './support/webhooks';
import { FakeStripe } from './support/fake-stripe';
import { FakeAdyen, signNotification } from './support/fake-adyen';
import { FakeCheckout, signWebhook } from './support/fake-checkout';
import { FakeBraintree } from './support/fake-braintree';
import { ignoreTimeout, waitFor } from './support/wait';

/**
 * One scenario that goes through every feature with planted secret values, then looks for each secret in
 * the database dump, the server log and every response (body and headers): in clear, in base64 (standard
 * and url-safe, at any byte alignment) and in hex (lower and upper case). The scenario runs on a database
 * of its own, so that every byte of the dump comes from it (the well-known test card numbers are planted
 * by other test files as well).
 */

function randomDigits(n: number): string {
  let out = String(1 + randomInt(9));
  while (out.length < n) out += String(randomInt(10));
  return out;
}

const tag = randomBytes(6).toString('hex');
const RANDOM_VISA = luhnCard('4', 16);
const RANDOM_MASTERCARD = luhnCard('51', 16);
const RANDOM_MASTERCARD_SPACED = RANDOM_MASTERCARD.replace(/(\d{4})(?=\d)/g, '$1 ');
const LUHN_INVALID = ((n: string) => n.slice(0, -1) + String((Number(n.slice(-1)) + 1) % 10))(
  luhnCard('4', 16),
);

const CARDS = {
  visa: { number: '4242424242424242', cvc: '847' },
  mastercard: { number: '5555555555554444', cvc: '593' },
  amex: { number: '378282246310005', cvc: '9321' },
  discover: { number: '6011111111111117', cvc: '706' },
  async: { number: '4000000000000259', cvc: '268' },
  challenge: { number: '4000000000003220', cvc: '419' },
  randomVisa: { number: RANDOM_VISA, cvc: '362' },
  randomMastercard: { number: RANDOM_MASTERCARD_SPACED, cvc: '851' },
};
type CardName = keyof typeof CARDS;
const ACCOUNTS = [randomDigits(14), randomDigits(17), randomDigits(11)];
const BAD_ROUTING_ACCOUNT = randomDigits(15);
const TOKEN_STRING = `plain-token-data-${tag}-Kq7`;
const TOKEN_OBJECT = {
  given_name: `Wilhelmina-${tag}`,
  national_id: `NID-${randomDigits(12)}`,
  nested: { note: `nested-note-${tag}-Pw2`, list: [`list-item-${tag}-Rt5`] },
};
const PLAIN_STRINGS = [`bare-string-one-${tag}-Mz3`, `bare-string-two-${tag}-Hy8`];
const ARRAY_TOKEN_DATA = [`array-data-${tag}-Vb4`, { inner: `array-inner-${tag}-Nc6` }];
const STRIPE_SECRET = `sk_test_stripe_${tag}_Aa1`;
const STRIPE_SECRET_2 = `sk_test_stripe_rotated_${tag}_Bb2`;
const STRIPE_VENDOR_SECRET = `sk_test_vendor_${tag}_Cc3`;
const ADYEN_API_KEY = `AQEyhmfxK${tag}adyenApiKey`;
const ADYEN_HMAC_KEY = `44782DEF547AAA06C910C43932B1EB0C${tag.toUpperCase()}`;
const ADYEN_HMAC_KEY_2 = `99182ABC547AAA06C910C43932B1EB0C${tag.toUpperCase()}`;
const ADYEN_VENDOR_API_KEY = `AQEvendor${tag}adyenApiKey`;
const ADYEN_VENDOR_HMAC_KEY = randomBytes(32).toString('hex').toUpperCase();
const CHECKOUT_VENDOR_SECRET = `sk_sbox_vendor_${tag}_Dd4`;
const CHECKOUT_WEBHOOK_SECRET = `whsec_checkout_${tag}_Ee5`;
const BRAINTREE_PUBLIC_KEY = `bt_public_${tag}`;
const BRAINTREE_PRIVATE_KEY = `bt_private_${tag}_Dd4`;
/** A network token's DPAN, and one cryptogram per rail it is paid at (base64 of 20 bytes, as wallets give them). */
const NETWORK_TOKEN_DPAN = luhnCard('4', 16);
const CRYPTOGRAMS = ['stripe', 'adyen', 'braintree', 'checkout'].map((rail) =>
  Buffer.from(`${rail.slice(0, 3)}${tag}${randomBytes(5).toString('hex')}`.slice(0, 20)).toString('base64'),
);

/** Headers whose values are counts, lengths or seconds: a 3-digit value there is no CVC. */
const NUMERIC_HEADERS = /^(content-length|x-ratelimit-.*|ratelimit.*|retry-after)$/;

interface Captured {
  route: string;
  body: string;
  headers: Record<string, string>;
  traceId: string;
  /** A malformed body is refused by the body parser, before the request logger: no log line. */
  logged: boolean;
}

interface Secret {
  kind: string;
  value: string;
}

/** The forms a secret is searched for: clear, base64 (standard, url-safe) at each alignment, hex. */
function encodings(value: string): { encoding: string; patterns: string[] }[] {
  const bytes = Buffer.from(value, 'utf8');
  // The characters of base64(prefix + bytes) that depend on `bytes` alone, for 0, 1 and 2 prefix bytes:
  // the secret is found whatever its offset inside a larger encoded value.
  const cores = (alphabet: 'base64' | 'base64url') =>
    [0, 1, 2].map((k) => {
      const encoded = Buffer.concat([Buffer.alloc(k, 0), bytes]).toString(alphabet);
      return encoded.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6));
    });
  return [
    { encoding: 'clear', patterns: [value] },
    { encoding: 'base64', patterns: cores('base64') },
    { encoding: 'base64url', patterns: cores('base64url') },
    { encoding: 'hex', patterns: [bytes.toString('hex')] },
    { encoding: 'HEX', patterns: [bytes.toString('hex').toUpperCase()] },
  ];
}

describe('secrets scan', () => {
  let db: { name: string; url: string };
  let t: TestApp;
  let tenant: TestTenant;
  let destination: Destination;
  let receiver: Receiver;
  let fakeStripe: FakeStripe;
  let fakeAdyen: FakeAdyen;
  let fakeCheckout: FakeCheckout;
  let fakeBraintree: FakeBraintree;
  const responses: Captured[] = [];
  const secrets: Secret[] = [];
  /**
   * What a response shows by design, taken out of it before the scan: the clear key of a created
   * application or key (and its idempotent replay), the session key and nonce of a created session, the
   * `data` of tokens read through a reveal rule, and the approval link (the `approval_url` of a pending
   * transaction, the approval page's own form actions).
   */
  const shownOnce = new Map<number, string[]>();
  const documented: string[] = [];

  const plant = (kind: string, value: string) => {
    if (!secrets.some((s) => s.value === value)) secrets.push({ kind, value });
  };

  beforeAll(async () => {
    db = await createDatabase('vault_test_secrets');
    destination = await new Destination().start();
    receiver = await new Receiver().start();
    fakeStripe = await new FakeStripe().start();
    fakeStripe.keys.add(STRIPE_VENDOR_SECRET);
    fakeAdyen = await new FakeAdyen().start();
    fakeAdyen.apiKeys.add(ADYEN_VENDOR_API_KEY);
    fakeCheckout = await new FakeCheckout().start();
    fakeCheckout.secretKeys.add(CHECKOUT_VENDOR_SECRET);
    fakeBraintree = await new FakeBraintree().start();
    fakeBraintree.keys.set(BRAINTREE_PUBLIC_KEY, BRAINTREE_PRIVATE_KEY);
    // A database of its own, so this app's webhook delivery worker sends this scenario's events only.
    t = await startApp({
      DATABASE_URL: db.url,
      LOG_LEVEL: 'trace',
      OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
      WEBHOOK_DELIVERY_ENABLED: 'true',
      WEBHOOK_POLL_MS: '100',
      VENDOR_BASE_URLS: `stripe-card=${fakeStripe.baseUrl},adyen-card=${fakeAdyen.baseUrl},braintree-card=${fakeBraintree.baseUrl},checkout-card=${fakeCheckout.baseUrl}`,
    });
    tenant = await newTenant(t, `secrets scan ${tag}`);
  });
  afterAll(async () => {
    await t?.close();
    await destination?.stop();
    await receiver?.stop();
    await fakeStripe?.close();
    await fakeAdyen?.close();
    await fakeCheckout?.close();
    await fakeBraintree?.close();
    if (db) await dropDatabase(db.name);
  });

  interface CallOptions {
    key?: string;
    body?: unknown;
    raw?: string;
    headers?: Record<string, string>;
    query?: Record<string, string | number>;
    /** The `"field":"value"` pairs this response shows by design (documented once-only display). */
    reveals?: (body: Record<string, unknown>) => string[];
  }

  /** Every request of the scenario goes through here, so that every response is scanned. */
  const call = async (
    method: 'get' | 'post' | 'put' | 'patch' | 'delete',
    path: string,
    expected: number,
    options: CallOptions = {},
  ): Promise<request.Response> => {
    let req = request(t.http)[method](path);
    if (options.key) req = req.set('BT-API-KEY', options.key);
    for (const [name, value] of Object.entries(options.headers ?? {})) req = req.set(name, value);
    if (options.query) req = req.query(options.query);
    let res: request.Response;
    if (options.raw !== undefined) res = await req.set('Content-Type', 'application/json').send(options.raw);
    else if (options.body !== undefined) res = await req.send(options.body as object);
    else res = await req;
    const index = responses.length;
    responses.push({
      route: `${method.toUpperCase()} ${path.replace(/\/orchestration\/approvals\/[^/]+/, '/orchestration/approvals/:token')} -> ${res.status}`,
      body: res.text ?? '',
      headers: res.headers,
      traceId: res.headers['bt-trace-id'],
      logged: options.raw === undefined,
    });
    if (options.reveals && res.status < 300) shownOnce.set(index, options.reveals(res.body));
    expect({ route: `${method.toUpperCase()} ${path}`, status: res.status }).toEqual({
      route: `${method.toUpperCase()} ${path}`,
      status: expected,
    });
    return res;
  };

  const json = (field: string, value: unknown) => `"${field}":${JSON.stringify(value)}`;
  const applicationKeys = (body: Record<string, unknown>) => [
    json('key', body.key),
    ...((body.keys as { key?: string }[] | undefined) ?? []).map((k) => json('key', k.key)),
  ];

  const createApplication = async (
    managementKey: string,
    body: Record<string, unknown>,
    headers?: Record<string, string>,
    status = 201,
  ) => {
    const res = await call('post', '/applications', status, {
      key: managementKey,
      body,
      headers,
      reveals: applicationKeys,
    });
    plant(`${String(body.type)} application key`, res.body.key);
    return res.body as { id: string; key: string; keys: { id: string }[] };
  };

  const waitForConnection = (key: string, id: string) =>
    waitFor(
      async () => {
        const res = await call('get', `/orchestration/connections/${id}`, 200, { key });
        return res.body.status !== 'pending' && (res.body as { status: string; fields: unknown[] });
      },
      { timeoutMs: 5000, intervalMs: 100, what: `connection ${id} to be verified` },
    );

  /** The transaction as it last stood, even when it never reached `status`: the caller asserts it. */
  const waitForTransaction = async (key: string, id: string, status: string) => {
    let last = { status: '' };
    await waitFor(
      async () => {
        last = (await call('get', `/orchestration/transactions/${id}`, 200, { key })).body as {
          status: string;
        };
        return last.status === status;
      },
      { timeoutMs: 8000, intervalMs: 200, what: `transaction ${id} to be ${status}` },
    ).catch(ignoreTimeout);
    return last;
  };

  it('keeps every planted secret out of the database, the logs and every response', async () => {
    for (const [name, card] of Object.entries(CARDS)) {
      plant(`card number (${name})`, card.number);
      if (card.number.includes(' ')) plant(`card number digits (${name})`, card.number.replace(/ /g, ''));
    }
    plant('card number failing Luhn', LUHN_INVALID);
    plant('network token DPAN', NETWORK_TOKEN_DPAN);
    CRYPTOGRAMS.forEach((c) => plant('network token cryptogram', c));
    ACCOUNTS.forEach((a) => plant('bank account number', a));
    plant('bank account number (refused request)', BAD_ROUTING_ACCOUNT);
    plant('token data (string)', TOKEN_STRING);
    plant('token data (object)', JSON.stringify(TOKEN_OBJECT));
    plant('token data (object field)', TOKEN_OBJECT.given_name);
    plant('token data (object field)', TOKEN_OBJECT.national_id);
    plant('token data (object field)', TOKEN_OBJECT.nested.note);
    plant('token data (object field)', TOKEN_OBJECT.nested.list[0]);
    PLAIN_STRINGS.forEach((s) => plant('token data (plain string)', s));
    plant('token data (array)', JSON.stringify(ARRAY_TOKEN_DATA));
    plant('token data (array item)', ARRAY_TOKEN_DATA[0] as string);
    plant('token data (array item)', (ARRAY_TOKEN_DATA[1] as { inner: string }).inner);
    plant('connection secret (stripe secret_key)', STRIPE_SECRET);
    plant('connection secret (stripe secret_key, updated)', STRIPE_SECRET_2);
    plant('connection secret (stripe secret_key, test environment)', STRIPE_VENDOR_SECRET);
    plant('connection secret (adyen api_key)', ADYEN_API_KEY);
    plant('connection secret (adyen hmac_key)', ADYEN_HMAC_KEY);
    plant('connection secret (adyen hmac_key, updated)', ADYEN_HMAC_KEY_2);
    plant('connection secret (adyen api_key, test environment)', ADYEN_VENDOR_API_KEY);
    plant('connection secret (adyen hmac_key, test environment)', ADYEN_VENDOR_HMAC_KEY);
    plant('connection secret (checkout secret_key, test environment)', CHECKOUT_VENDOR_SECRET);
    plant('connection secret (checkout webhook_secret, test environment)', CHECKOUT_WEBHOOK_SECRET);
    plant('connection secret (braintree private_key, test environment)', BRAINTREE_PRIVATE_KEY);
    plant('management key', tenant.managementKey);
    const mgt = tenant.managementKey;

    // A webhook subscribed to every event type, before any change: every event the scenario records is
    // in the dump (webhook_events) and delivered to the receiver, whose requests are scanned too.
    const webhook = await call('post', '/webhooks', 201, {
      key: mgt,
      body: { name: 'every event', url: receiver.hook(), events: [...EVENT_TYPES] },
      reveals: (body) => [json('secret', body.secret)],
    });
    plant('webhook signing secret', webhook.body.secret);

    // Applications and keys: a second management application, a private one (orchestration), a public
    // one, and a private one whose key is rotated.
    const mgt2 = await createApplication(mgt, {
      name: 'second management',
      type: 'management',
      permissions: ['application:read', 'application:update', 'log:read', 'tenant:read'],
    });
    const pvt = await createApplication(mgt, {
      name: 'private',
      type: 'private',
      permissions: [
        ...ORCHESTRATION_PERMISSIONS,
        'token:update',
        'token:delete',
        'token:search',
        'orchestration:buyers:read',
        'orchestration:buyers:create',
        'orchestration:buyers:update',
        'orchestration:buyers:delete',
        'orchestration:relay',
      ],
    });
    const pub = await createApplication(mgt, {
      name: 'public',
      type: 'public',
      permissions: ['token:create'],
    });
    const rotating = await createApplication(mgt, {
      name: 'rotating',
      type: 'private',
      permissions: ['token:create', 'token:read'],
    });
    const rotated = await call('post', `/applications/${rotating.id}/keys`, 201, {
      key: mgt2.key,
      reveals: (body) => [json('key', body.key)],
    });
    plant('rotated application key', rotated.body.key);
    await call('get', `/applications/${rotating.id}/keys`, 200, { key: mgt2.key });
    await call('delete', `/applications/${rotating.id}/keys/${rotating.keys[0].id}`, 204, { key: mgt2.key });
    await call('get', '/applications/key', 401, { key: rotating.key });
    await call('get', '/applications/key', 200, { key: rotated.body.key });
    await call('get', `/applications/${rotating.id}`, 200, { key: mgt2.key });
    await call('get', '/applications', 200, { key: mgt, query: { size: 100 } });
    await call('put', `/applications/${pub.id}`, 200, {
      key: mgt,
      body: { name: 'public renamed', permissions: ['token:create'] },
    });
    // An application deleted (its application:deleted event lists the keys it had).
    const doomed = await createApplication(mgt, {
      name: 'doomed',
      type: 'private',
      permissions: ['token:read'],
    });
    await call('delete', `/applications/${doomed.id}`, 204, { key: mgt });
    await call('get', '/permissions', 200, { key: pvt.key, query: { application_type: 'private' } });
    await call('get', '/tenants/self', 200, { key: mgt2.key });

    // A retry of POST /applications with an idempotency key: never a replay of the key, a new one.
    const appBody = { name: 'idempotent', type: 'private', permissions: ['token:create'] };
    const idemApp = await createApplication(mgt, appBody, { 'BT-IDEMPOTENCY-KEY': `app-${tag}` });
    const idemReplay = await call('post', '/applications', 201, {
      key: mgt,
      body: appBody,
      headers: { 'BT-IDEMPOTENCY-KEY': `app-${tag}` },
      reveals: applicationKeys,
    });
    expect(idemReplay.headers['bt-idempotency-replayed']).toBeUndefined();
    expect(idemReplay.body.key).not.toBe(idemApp.key);

    // Tokenize: a single element of each type, a nested object, an array.
    const cardData = (name: CardName, withCvc = true) => ({
      number: CARDS[name].number,
      expiration_month: 11,
      expiration_year: 2031,
      ...(withCvc ? { cvc: CARDS[name].cvc } : {}),
    });
    const tokenIds: Partial<Record<CardName, string>> = {};
    const single = await call('post', '/tokenize', 201, {
      key: pvt.key,
      body: { type: 'card', data: cardData('visa'), search_indexes: ['{{ data.number }}'] },
    });
    tokenIds.visa = single.body.id;
    const bank = await call('post', '/tokenize', 201, {
      key: pvt.key,
      body: {
        type: 'bank',
        data: { routing_number: '021000021', account_number: ACCOUNTS[0] },
        search_indexes: ['{{ data.account_number }}'],
      },
    });
    const stringToken = await call('post', '/tokenize', 201, {
      key: pvt.key,
      body: { type: 'token', data: TOKEN_STRING, search_indexes: ['{{ data }}', '{{ data | upcase }}'] },
    });
    const objectToken = await call('post', '/tokens', 201, {
      key: pvt.key,
      body: {
        type: 'token',
        data: TOKEN_OBJECT,
        metadata: { purpose: 'scan' },
        search_indexes: ['{{ data.national_id }}'],
      },
    });
    const nested = await call('post', '/tokenize', 201, {
      key: pvt.key,
      body: {
        customer: PLAIN_STRINGS[0],
        payment: {
          card: {
            type: 'card',
            data: cardData('mastercard'),
            search_indexes: ['{{ data.number }}', '{{ data.number | last4 }}'],
          },
          amex: { type: 'card', data: cardData('amex'), search_indexes: ['{{ data.number }}'] },
          bank: { type: 'bank', data: { routing_number: '021000021', account_number: ACCOUNTS[1] } },
        },
        extra: { deeper: [PLAIN_STRINGS[1], { type: 'token', data: ARRAY_TOKEN_DATA }] },
      },
    });
    tokenIds.mastercard = nested.body.payment.card.id;
    tokenIds.amex = nested.body.payment.amex.id;
    const array = await call('post', '/tokenize', 201, {
      key: pvt.key,
      body: [
        { type: 'card', data: cardData('discover') },
        { type: 'card', data: cardData('async') },
        { type: 'card', data: cardData('challenge') },
        { type: 'card', data: cardData('randomVisa'), search_indexes: ['{{ data.number }}'] },
        { type: 'card', data: cardData('randomMastercard') },
        { type: 'bank', data: { routing_number: '021000021', account_number: ACCOUNTS[2] } },
      ],
    });
    [tokenIds.discover, tokenIds.async, tokenIds.challenge, tokenIds.randomVisa, tokenIds.randomMastercard] =
      array.body.map((x: { id: string }) => x.id);
    expect(array.body[4].data.number).toBe(`XXXXXXXXXXXX${RANDOM_MASTERCARD.slice(-4)}`);

    // Idempotent retry of a card tokenize: the replay is the stored response.
    const idemBody = { type: 'card', data: cardData('randomVisa') };
    const first = await call('post', '/tokenize', 201, {
      key: pvt.key,
      body: idemBody,
      headers: { 'BT-IDEMPOTENCY-KEY': `tok-${tag}` },
    });
    const replay = await call('post', '/tokenize', 201, {
      key: pvt.key,
      body: idemBody,
      headers: { 'BT-IDEMPOTENCY-KEY': `tok-${tag}` },
    });
    expect(replay.headers['bt-idempotency-replayed']).toBe('true');
    expect(replay.body.id).toBe(first.body.id);

    // Read, list, search, update, delete.
    await call('get', `/tokens/${tokenIds.visa}`, 200, { key: pvt.key });
    await call('get', `/tokens/${bank.body.id}`, 200, { key: pvt.key });
    await call('get', `/tokens/${stringToken.body.id}`, 200, { key: pvt.key });
    await call('get', `/tokens/${objectToken.body.id}`, 200, { key: pvt.key });
    await call('get', '/tokens', 200, { key: pvt.key, query: { size: 100 } });
    await call('get', '/tokens', 200, { key: pvt.key, query: { type: 'card', size: 100 } });
    await call('get', '/tokens', 200, { key: pvt.key, query: { 'metadata.purpose': 'scan' } });
    const search = async (query: string, expectedCount: number) => {
      const res = await call('post', '/tokens/search', 200, { key: pvt.key, body: { query } });
      expect({ query, found: res.body.data.length }).toEqual({ query, found: expectedCount });
    };
    await search(`data:${CARDS.visa.number}`, 1);
    await search(`data:${RANDOM_VISA} type:card`, 1);
    await search(`data:${CARDS.mastercard.number}`, 1);
    await search(`data:${ACCOUNTS[0]}`, 1);
    await search(`data:${TOKEN_STRING}`, 1);
    await search(`data:${TOKEN_OBJECT.national_id}`, 1);

    // The one deliberate exit (docs/access-rules.md): reads through a reveal rule show the data in clear,
    // in that response body only (taken out of it before the scan, like a key shown once); never the CVC,
    // and nothing of it in the log, the audit rows, the dump or an idempotency record.
    const revealer = await createApplication(mgt, {
      name: 'revealer',
      type: 'private',
      rules: [
        { priority: 1, container: '/pci/', permissions: ['token:read', 'token:search'], transform: 'reveal' },
        { priority: 2, container: '/general/', permissions: ['token:read'], transform: 'reveal' },
      ],
    });
    const revealedData = (body: Record<string, unknown>) => [json('data', body.data)];
    const revealedCard = await call('get', `/tokens/${tokenIds.visa}`, 200, {
      key: revealer.key,
      reveals: revealedData,
    });
    expect(revealedCard.body.data).toEqual({ ...cardData('visa', false) });
    const revealedObject = await call('get', `/tokens/${objectToken.body.id}`, 200, {
      key: revealer.key,
      reveals: revealedData,
    });
    expect(revealedObject.body.data).toEqual(TOKEN_OBJECT);
    const revealedSearch = await call('post', '/tokens/search', 200, {
      key: revealer.key,
      body: { query: `data:${CARDS.mastercard.number}` },
      headers: { 'BT-IDEMPOTENCY-KEY': `reveal-${tag}` },
      reveals: (body) => (body.data as Record<string, unknown>[]).map((token) => json('data', token.data)),
    });
    expect(revealedSearch.body.data.map((token: { data: { number: string } }) => token.data.number)).toEqual([
      CARDS.mastercard.number,
    ]);
    await call('patch', `/tokens/${tokenIds.amex}`, 200, {
      key: pvt.key,
      headers: { 'Content-Type': 'application/merge-patch+json' },
      body: JSON.stringify({ metadata: { updated: 'yes' }, search_indexes: ['{{ data.number }}'] }),
    });
    await search(`data:${CARDS.amex.number}`, 1);
    // Re-keying over stored data needs reveal (docs/permissions.md): refused, and the error echoes nothing.
    await call('patch', `/tokens/${stringToken.body.id}`, 403, {
      key: pvt.key,
      body: { search_indexes: ['{{ data | downcase }}'] },
    });
    await search(`data:${TOKEN_STRING.toUpperCase()}`, 1);
    plant('token data (search index value)', TOKEN_STRING.toUpperCase());
    await call('delete', `/tokens/${bank.body.id}`, 204, { key: pvt.key });
    await call('get', `/tokens/${bank.body.id}`, 404, { key: pvt.key });
    await search(`data:${ACCOUNTS[0]}`, 0);

    // Validation errors that must echo nothing.
    const luhn = await call('post', '/tokenize', 400, {
      key: pvt.key,
      body: { type: 'card', data: { number: LUHN_INVALID, expiration_month: 11, expiration_year: 2031 } },
    });
    expect(luhn.body.errors).toHaveProperty(['data.number']);
    const invalid = await call('post', '/tokenize', 400, {
      key: pvt.key,
      body: {
        card: { type: 'card', data: { ...cardData('visa'), cvc: '12' } },
        bank: { type: 'bank', data: { routing_number: '123456789', account_number: BAD_ROUTING_ACCOUNT } },
        text: { type: 'token', data: TOKEN_STRING, search_indexes: ['{{ data.missing | nope }}'] },
        indexed: {
          type: 'card',
          data: cardData('randomVisa'),
          search_indexes: ['{{ data.number | no_such_filter }}'],
          fingerprint_expression: '{{ data.number',
        },
      },
    });
    expect(Object.keys(invalid.body.errors)).toEqual(
      expect.arrayContaining(['card.data.cvc', 'bank.data.routing_number']),
    );
    for (const raw of [
      `{"number": "${CARDS.visa.number}"`,
      `{"type": "card", "data": {"number": "${CARDS.mastercard.number}", "cvc": "${CARDS.mastercard.cvc}",}}`,
    ]) {
      const malformed = await call('post', '/tokenize', 400, { key: pvt.key, raw });
      expect(malformed.body.code).toBe('malformed_json');
    }

    // Sessions: create with the public key, authorize with the private key, tokenize with the session key.
    const session = await call('post', '/sessions', 201, {
      key: pub.key,
      reveals: (body) => [json('session_key', body.session_key), json('nonce', body.nonce)],
    });
    plant('session key', session.body.session_key);
    plant('session nonce', session.body.nonce);
    await call('post', '/tokenize', 403, {
      key: session.body.session_key,
      body: { type: 'card', data: cardData('randomVisa') },
    });
    await call('post', '/sessions/authorize', 204, {
      key: pvt.key,
      body: { nonce: session.body.nonce, permissions: ['token:create', 'token:read'] },
    });
    await call('post', '/sessions/authorize', 400, {
      key: pvt.key,
      body: { nonce: session.body.nonce, permissions: ['token:create'] },
    });
    const viaSession = await call('post', '/tokenize', 201, {
      key: session.body.session_key,
      body: {
        card: { type: 'card', data: cardData('randomMastercard') },
        text: { type: 'token', data: TOKEN_STRING },
      },
    });
    await call('get', `/tokens/${viaSession.body.card.id}`, 200, { key: session.body.session_key });

    // Connections: create with secret fields, update with the secret as ******** and with a new value.
    const formulas = await call('get', '/orchestration/connection_formulas', 200, { key: pvt.key });
    expect(formulas.body.length).toBe(18);
    const stripeBody = (secret: string) => ({
      connection_formula_id: 'stripe-card',
      method: 'card',
      display_name: 'Stripe scan',
      fields: [{ key: 'secret_key', value: secret }],
      accepted_countries: ['US', 'DE'],
      accepted_currencies: ['USD', 'EUR'],
    });
    const stripe = (
      await call('post', '/orchestration/connections', 201, { key: pvt.key, body: stripeBody(STRIPE_SECRET) })
    ).body.id as string;
    expect((await waitForConnection(pvt.key, stripe)).status).toBe('available');
    await call('put', `/orchestration/connections/${stripe}`, 200, {
      key: pvt.key,
      body: stripeBody('********'),
    });
    expect(await waitForConnection(pvt.key, stripe)).toMatchObject({
      status: 'available',
      fields: [{ key: 'secret_key', value: '********' }],
    });
    const adyenBody = (apiKey: string, hmacKey: string) => ({
      connection_formula_id: 'adyen-card',
      method: 'card',
      display_name: 'Adyen scan',
      fields: [
        { key: 'api_key', value: apiKey },
        { key: 'merchant_account', value: `ScanMerchant${tag}` },
        { key: 'hmac_key', value: hmacKey },
      ],
      accepted_countries: ['US'],
      accepted_currencies: ['USD'],
    });
    const adyen = (
      await call('post', '/orchestration/connections', 201, {
        key: pvt.key,
        body: adyenBody(ADYEN_API_KEY, ADYEN_HMAC_KEY),
      })
    ).body.id as string;
    expect((await waitForConnection(pvt.key, adyen)).status).toBe('available');
    await call('post', `/orchestration/connections/${adyen}`, 200, {
      key: pvt.key,
      body: adyenBody('********', ADYEN_HMAC_KEY_2),
    });
    expect((await waitForConnection(pvt.key, adyen)).status).toBe('available');
    await call('put', `/orchestration/connections/${stripe}`, 200, {
      key: pvt.key,
      body: stripeBody(STRIPE_SECRET_2),
    });
    expect((await waitForConnection(pvt.key, stripe)).status).toBe('available');
    await call('get', '/orchestration/connections', 200, { key: pvt.key });

    // Transactions: authorize and capture, void, capture intent and refund, asynchronous capture, 3-D Secure.
    const pay = async (name: CardName, extra: Record<string, unknown> = {}, connection = stripe) =>
      (
        await call('post', '/orchestration/transactions', 201, {
          key: pvt.key,
          body: { amount: 1311, currency: 'USD', connection_id: connection, token: tokenIds[name], ...extra },
        })
      ).body as { id: string; status: string; payment_method: { approval_url: string | null } };
    const op = (id: string, action: string, expected: number, body: object = {}) =>
      call('post', `/orchestration/transactions/${id}/${action}`, expected, { key: pvt.key, body });

    const authorized = await pay('visa', { country: 'US', external_identifier: `order-${tag}` });
    // A 3-D Secure authentication made elsewhere: its cryptogram goes to the vendor and nowhere else.
    const cavv = `AAABB${tag.replace(/[^A-Za-z0-9]/g, '').slice(0, 16)}QAAAAAA=`;
    plant('3-D Secure cryptogram', cavv);
    await pay('visa', { three_d_secure_data: { version: '2.2.0', eci: '05', cavv } });
    expect(authorized.status).toBe('authorization_succeeded');
    await op(authorized.id, 'capture', 200, { amount: 1311 });
    await op(authorized.id, 'refunds', 201, { amount: 311 });
    await call('get', `/orchestration/transactions/${authorized.id}/refunds`, 200, { key: pvt.key });

    const voided = await pay('mastercard', {}, adyen);
    expect(voided.status).toBe('authorization_succeeded');
    await op(voided.id, 'void', 200);
    await op(voided.id, 'capture', 409);

    const captureIntent = await pay('amex', { intent: 'capture' });
    expect(captureIntent.status).toBe('capture_succeeded');
    await op(captureIntent.id, 'refunds', 201);

    expect((await pay('discover', { payment_source: 'card_on_file' })).status).toBe(
      'authorization_succeeded',
    );
    expect((await pay('randomVisa')).status).toBe('authorization_succeeded');

    // A buyer with a stored card, charged by buyer alone; renamed, then deleted (buyer:* events).
    const buyer = (
      await call('post', '/orchestration/buyers', 201, {
        key: pvt.key,
        body: { external_identifier: `customer-${tag}`, display_name: 'Scan Buyer' },
      })
    ).body as { id: string };
    await call('post', `/orchestration/buyers/${buyer.id}/payment-methods`, 201, {
      key: pvt.key,
      body: { token: tokenIds.visa },
    });
    await call('get', `/orchestration/buyers/${buyer.id}/payment-methods`, 200, { key: pvt.key });
    expect(
      (await pay('visa', { token: undefined, buyer_id: buyer.id, merchant_initiated: true })).status,
    ).toBe('authorization_succeeded');
    await call('put', `/orchestration/buyers/${buyer.id}`, 200, {
      key: pvt.key,
      body: { display_name: null },
    });
    await call('delete', `/orchestration/buyers/${buyer.id}`, 204, { key: pvt.key });

    const asyncTx = await pay('async');
    expect((await op(asyncTx.id, 'capture', 200)).body.status).toBe('capture_pending');

    const challenged = await pay('challenge');
    expect(challenged.status).toBe('buyer_approval_pending');
    const approvalUrl = challenged.payment_method.approval_url!;
    const approvalPath = new URL(approvalUrl).pathname;
    plant('approval page token', approvalPath.split('/').pop()!);
    documented.push(
      json('approval_url', approvalUrl),
      `action="${approvalPath}/approve"`,
      `action="${approvalPath}/decline"`,
    );
    const page = await call('get', approvalPath, 200);
    expect(page.text).toContain(`•••• ${CARDS.challenge.number.slice(-4)}`);
    const approved = await call('post', `${approvalPath}/approve`, 200);
    expect(approved.text).toContain('Payment approved');
    await call('get', approvalPath, 409);
    expect((await waitForTransaction(pvt.key, challenged.id, 'authorization_succeeded')).status).toBe(
      'authorization_succeeded',
    );
    expect((await waitForTransaction(pvt.key, asyncTx.id, 'capture_succeeded')).status).toBe(
      'capture_succeeded',
    );
    // Stripe's test environment (a fake Stripe): the card and the key leave for Stripe (the deliberate
    // exit), and nothing else does; the requests Stripe received are scanned below.
    const vendor = (
      await call('post', '/orchestration/connections', 201, {
        key: pvt.key,
        body: { ...stripeBody(STRIPE_VENDOR_SECRET), environment: 'test' },
      })
    ).body.id as string;
    expect((await waitForConnection(pvt.key, vendor)).status).toBe('available');
    const atStripe = await pay('visa', {}, vendor);
    expect(atStripe.status).toBe('authorization_succeeded');
    await op(atStripe.id, 'capture', 200, { amount: 1000 });
    await op(atStripe.id, 'refunds', 201, { amount: 400 });
    expect((await pay('amex', { intent: 'capture' }, vendor)).status).toBe('capture_succeeded');
    expect(fakeStripe.posts(/^\/v1\/payment_intents$/)).toHaveLength(2);

    // Adyen's test environment (a fake Adyen): the card and the API key leave for Adyen, and nothing
    // else does; its notifications come back signed with the connection's HMAC key.
    const adyenVendor = (
      await call('post', '/orchestration/connections', 201, {
        key: pvt.key,
        body: {
          connection_formula_id: 'adyen-card',
          method: 'card',
          display_name: 'Adyen test',
          environment: 'test',
          fields: [
            { key: 'api_key', value: ADYEN_VENDOR_API_KEY },
            { key: 'merchant_account', value: 'TestMerchant' },
            { key: 'hmac_key', value: ADYEN_VENDOR_HMAC_KEY },
          ],
          accepted_countries: ['US'],
          accepted_currencies: ['USD'],
        },
      })
    ).body.id as string;
    expect((await waitForConnection(pvt.key, adyenVendor)).status).toBe('available');
    const atAdyen = await pay('visa', {}, adyenVendor);
    expect(atAdyen.status).toBe('authorization_succeeded');
    await op(atAdyen.id, 'capture', 200, { amount: 1000 });
    const notifyAdyen = () =>
      call('post', '/orchestration/vendors/adyen/notifications', 200, {
        body: {
          live: 'false',
          notificationItems: fakeAdyen.queued.splice(0).map((item) => ({
            NotificationRequestItem: {
              ...item,
              additionalData: { hmacSignature: signNotification(item, ADYEN_VENDOR_HMAC_KEY) },
            },
          })),
        },
      });
    await notifyAdyen();
    await op(atAdyen.id, 'refunds', 201, { amount: 400 });
    await notifyAdyen();
    const settledAtAdyen = await call('get', `/orchestration/transactions/${atAdyen.id}`, 200, {
      key: pvt.key,
    });
    expect(settledAtAdyen.body).toMatchObject({ status: 'capture_succeeded', refunded_amount: 400 });
    expect((await pay('amex', { intent: 'capture' }, adyenVendor)).status).toBe('capture_succeeded');
    expect(fakeAdyen.posts(/^\/payments$/)).toHaveLength(2);

    // Braintree's sandbox (a fake Braintree): the card and the keys leave for Braintree, nothing else.
    const braintreeVendor = (
      await call('post', '/orchestration/connections', 201, {
        key: pvt.key,
        body: {
          connection_formula_id: 'braintree-card',
          method: 'card',
          display_name: 'Braintree test',
          environment: 'test',
          fields: [
            { key: 'merchant_id', value: fakeBraintree.ledger.merchantId },
            { key: 'public_key', value: BRAINTREE_PUBLIC_KEY },
            { key: 'private_key', value: BRAINTREE_PRIVATE_KEY },
          ],
          accepted_countries: ['US'],
          accepted_currencies: ['USD'],
        },
      })
    ).body.id as string;
    expect((await waitForConnection(pvt.key, braintreeVendor)).status).toBe('available');
    const atBraintree = await pay('visa', {}, braintreeVendor);
    expect(atBraintree.status).toBe('authorization_succeeded');
    await op(atBraintree.id, 'capture', 200, { amount: 1000 });
    const atBraintreeRow = await call('get', `/orchestration/transactions/${atBraintree.id}`, 200, {
      key: pvt.key,
    });
    fakeBraintree.settle(atBraintreeRow.body.connection_transaction_id as string);
    await op(atBraintree.id, 'refunds', 201, { amount: 400 });
    expect((await pay('amex', { intent: 'capture' }, braintreeVendor)).status).toBe('capture_succeeded');
    expect(fakeBraintree.calls('TokenizeCreditCard')).toHaveLength(2);
    expect(fakeBraintree.invalid).toEqual([]);

    // Checkout.com's sandbox (a fake Checkout.com): the card and the secret key leave for it, and nothing
    // else does; its webhooks come back signed with the connection's webhook secret.
    const checkoutVendor = (
      await call('post', '/orchestration/connections', 201, {
        key: pvt.key,
        body: {
          connection_formula_id: 'checkout-card',
          method: 'card',
          display_name: 'Checkout.com test',
          environment: 'test',
          fields: [
            { key: 'secret_key', value: CHECKOUT_VENDOR_SECRET },
            { key: 'public_key', value: 'pk_sbox_scan' },
            { key: 'processing_channel_id', value: [...fakeCheckout.processingChannels][0] },
            { key: 'webhook_secret', value: CHECKOUT_WEBHOOK_SECRET },
          ],
          accepted_countries: ['US'],
          accepted_currencies: ['USD'],
        },
      })
    ).body.id as string;
    expect((await waitForConnection(pvt.key, checkoutVendor)).status).toBe('available');
    const atCheckout = await pay('visa', {}, checkoutVendor);
    expect(atCheckout.status).toBe('authorization_succeeded');
    const notifyCheckout = async () => {
      for (const event of fakeCheckout.queued.splice(0)) {
        const raw = JSON.stringify(event);
        await call('post', '/orchestration/notifications/checkout', 200, {
          raw,
          headers: { 'Cko-Signature': signWebhook(raw, CHECKOUT_WEBHOOK_SECRET) },
        });
      }
    };
    await op(atCheckout.id, 'capture', 200, { amount: 1000 });
    await notifyCheckout();
    await op(atCheckout.id, 'refunds', 201, { amount: 400 });
    await notifyCheckout();
    const settledAtCheckout = await call('get', `/orchestration/transactions/${atCheckout.id}`, 200, {
      key: pvt.key,
    });
    expect(settledAtCheckout.body).toMatchObject({ status: 'capture_succeeded', refunded_amount: 400 });
    expect((await pay('amex', { intent: 'capture' }, checkoutVendor)).status).toBe('capture_succeeded');
    expect(fakeCheckout.posts(/^\/payments$/)).toHaveLength(2);

    // Network tokens at each rail: the DPAN and the cryptogram leave for the vendor, and nowhere else (the
    // cryptogram is never shown, stored in clear or logged; forgotten after its first authorization).
    const railConnections = [vendor, adyenVendor, braintreeVendor, checkoutVendor];
    for (const [i, connection] of railConnections.entries()) {
      const networkToken = await call('post', '/tokens', 201, {
        key: pvt.key,
        body: {
          type: 'network_token',
          data: {
            number: NETWORK_TOKEN_DPAN,
            expiration_month: 10,
            expiration_year: 2031,
            cryptogram: CRYPTOGRAMS[i],
            eci: '05',
            source: i % 2 ? 'google_pay' : 'apple_pay',
          },
        },
      });
      await call('get', `/tokens/${networkToken.body.id}`, 200, { key: pvt.key });
      const body = { amount: 1311, currency: 'USD', connection_id: connection, token: networkToken.body.id };
      for (let n = 0; n < 2; n++) {
        const paid = await call('post', '/orchestration/transactions', 201, { key: pvt.key, body });
        expect(paid.body).toMatchObject({
          status: 'authorization_succeeded',
          payment_method: { method: 'network_token' },
        });
      }
    }
    // Each vendor that takes a cryptogram received it (Stripe's package has no parameter for one).
    for (const [i, received] of [
      [1, JSON.stringify(fakeAdyen.requests)],
      [2, JSON.stringify(fakeBraintree.requests.map((r) => r.variables))],
      [3, JSON.stringify(fakeCheckout.requests)],
    ] as const)
      expect(received).toContain(CRYPTOGRAMS[i]);

    // Relay refunds of a payment made at Stripe before the migration: one goes through, the next one
    // asks more than is left and fails (relay:refund:created, :succeeded and :failed).
    const seeded = fakeStripe.seedPayment(1000);
    const relay = {
      connection_id: vendor,
      vendor_payment_id: seeded.paymentIntent,
      currency: 'USD',
      amount: 600,
    };
    for (const [n, status] of [
      [1, 'succeeded'],
      [2, 'failed'],
    ] as const) {
      const refund = await call('post', '/orchestration/relay/refunds', 201, {
        key: pvt.key,
        body: relay,
        headers: { 'BT-IDEMPOTENCY-KEY': `relay-scan-${n}` },
      });
      expect(refund.body.status).toBe(status);
    }

    await call('get', '/orchestration/transactions', 200, { key: pvt.key, query: { size: 100 } });
    await call('get', '/orchestration/transactions', 200, {
      key: pvt.key,
      query: { external_identifier: `order-${tag}` },
    });

    // The proxy: detokenized data leaves for the destination (the deliberate exit), and goes nowhere else
    // (the destination here answers without echoing it). Ephemeral, then pre-configured.
    const expressions = {
      card: `{{ ${tokenIds.randomVisa} }}`,
      number: `{{ token: ${tokenIds.randomMastercard} | json: '$.number' }}`,
      text: `n={{ ${tokenIds.visa} | json: '$.number' }}`,
    };
    await call('post', '/proxy/status/201', 201, {
      key: pvt.key,
      headers: { 'BT-PROXY-URL': destination.url('/pay'), 'BT-IDEMPOTENCY-KEY': `proxy-${tag}` },
      body: expressions,
    });
    const sent = destination.received.at(-1)!.body.toString();
    expect(sent).toContain(RANDOM_VISA);
    expect(sent).toContain(RANDOM_MASTERCARD);
    const proxy = await call('post', '/proxies', 201, {
      key: mgt,
      body: { name: 'secrets scan proxy', destination_url: destination.url('/v1') },
    });
    await call('put', `/proxy/status/202?pan={{ ${tokenIds.visa} | json: '$.number' }}`, 202, {
      key: pvt.key,
      headers: { 'BT-PROXY-KEY': proxy.body.key, 'X-Card': `{{ ${tokenIds.visa} | json: '$.number' }}` },
      body: expressions,
    });
    expect(destination.received.at(-1)!.headers['x-card']).toBe(CARDS.visa.number);
    await call('post', '/proxy', 400, {
      key: pvt.key,
      headers: { 'BT-PROXY-URL': destination.url() },
      body: { refused: `{{ 00000000-0000-4000-8000-000000000000 }}`, card: `{{ ${tokenIds.visa} }}` },
    });

    // A card import (docs/migration.md): the file's number, holder's name and processor's token planted;
    // the number sealed in its token, the processor's token sealed with its line's result.
    const imported = luhnCard('4', 16);
    const holder = `Holder-${tag}-Qz9`;
    const processorToken = `pm_import_${tag}_Lx4`;
    plant('imported card number', imported);
    plant("imported card holder's name", holder);
    plant("imported card's processor token", processorToken);
    const importKey = await call('get', '/tokens/imports/key', 200, { key: mgt });
    const file = await encryptTo(
      importKey.body.public_key as string,
      'number,expiration_month,expiration_year,holder_name,connection_id,connection_token\n' +
        `${imported},12,2031,${holder},00000000-0000-4000-8000-00000000a001,${processorToken}\n` +
        `${imported.slice(0, -1)}${(Number(imported.slice(-1)) + 1) % 10},12,2031,,,\n`,
      'cards.csv',
    );
    const job = await call('post', '/tokens/imports', 202, {
      key: mgt,
      body: file,
      headers: { 'Content-Type': 'application/pgp-encrypted' },
    });
    await waitFor(
      async () =>
        (await call('get', `/tokens/imports/${String(job.body.id)}`, 200, { key: mgt })).body.status ===
        'completed',
      { timeoutMs: 10_000, intervalMs: 100, what: 'the card import to complete' },
    );
    await call('get', `/tokens/imports/${String(job.body.id)}/results`, 200, { key: mgt });

    // Audit logs, walked to the end with the cursor.
    let start: string | undefined;
    let pages = 0;
    do {
      const res = await call('get', '/logs', 200, {
        key: mgt2.key,
        query: start ? { size: 100, start } : { size: 100 },
      });
      start = res.body.pagination.after;
      pages++;
    } while (start && pages < 50);
    await call('get', '/logs/entity-types', 200, { key: mgt2.key });
    await call('get', '/logs', 200, { key: mgt, query: { entity_type: 'token', page: 1, size: 100 } });

    // --- The scan ---
    const dump = execFileSync('pg_dump', ['--data-only', '--no-owner', db.url], {
      encoding: 'utf8',
      maxBuffer: 512 * 1024 * 1024,
    });
    expect(dump).toContain(tokenIds.visa);
    // The dump holds what the scan is about: stored idempotent responses, audit logs, sealed connection fields.
    const counts: { table: string; n: number }[] = await t.app.get(DataSource).query(
      `SELECT 'idempotency_records' AS table, count(*)::int AS n FROM idempotency_records
       UNION ALL SELECT 'audit_logs', count(*)::int FROM audit_logs
       UNION ALL SELECT 'connections', count(*)::int FROM connections
       UNION ALL SELECT 'transactions', count(*)::int FROM transactions
       UNION ALL SELECT 'webhook_events', count(*)::int FROM webhook_events`,
    );
    expect(Object.fromEntries(counts.map((c) => [c.table, c.n > 0]))).toEqual({
      idempotency_records: true,
      audit_logs: true,
      connections: true,
      transactions: true,
      webhook_events: true,
    });
    // Every kind of event was recorded, so that the scan covers every payload shape.
    const types: { type: string }[] = await t.app
      .get(DataSource)
      .query('SELECT DISTINCT type FROM webhook_events ORDER BY type');
    expect(types.map((r) => r.type)).toEqual([...EVENT_TYPES].sort());
    // Every request's log line is in (pino writes the completion line after the response is sent).
    expect(responses.every((r) => r.traceId)).toBe(true);
    const unlogged = () => responses.filter((r) => r.logged && !t.logs.some((l) => l.includes(r.traceId)));
    await waitFor(() => unlogged().length === 0, { timeoutMs: 1000, what: 'every log line' }).catch(
      ignoreTimeout,
    );
    expect(unlogged().map((r) => r.route)).toEqual([]);
    // Every event was delivered (signed), and each delivery is scanned as a response is.
    const deliveredAll = async (): Promise<boolean> => {
      const [{ left }]: { left: number }[] = await t.app
        .get(DataSource)
        .query(`SELECT count(*)::int AS left FROM webhook_deliveries WHERE status <> 'succeeded'`);
      return left === 0;
    };
    await waitFor(deliveredAll, { timeoutMs: 10_000, intervalMs: 50, what: 'every delivery' });
    expect(receiver.received.length).toBeGreaterThan(20);
    for (const delivered of receiver.received)
      responses.push({
        route: `webhook delivery ${String(payload(delivered).type)}`,
        body: delivered.body,
        headers: delivered.headers as Record<string, string>,
        traceId: '',
        logged: false,
      });
    // What each vendor received, but for what was sent to it deliberately: the cards paid there and its key.
    const vendorReceived = (route: string, sent: unknown, credential: [string, string]) => {
      let text = JSON.stringify(sent);
      for (const card of [CARDS.visa, CARDS.amex])
        text = text.split(card.number).join('[sent]').split(`"${card.cvc}"`).join('"[sent]"');
      for (const sentDeliberately of [NETWORK_TOKEN_DPAN, ...CRYPTOGRAMS])
        text = text.split(sentDeliberately).join('[sent]');
      responses.push({
        route: `vendor request ${route}`,
        body: text.split(credential[0]).join(credential[1]),
        headers: {},
        traceId: '',
        logged: false,
      });
    };
    for (const sent of fakeStripe.requests)
      vendorReceived(
        `${sent.method} ${sent.path}`,
        { body: sent.body, query: sent.query, headers: sent.headers },
        [`Bearer ${STRIPE_VENDOR_SECRET}`, 'Bearer [sent]'],
      );
    for (const sent of fakeCheckout.requests)
      vendorReceived(`${sent.method} ${sent.path}`, { body: sent.body, headers: sent.headers }, [
        `Bearer ${CHECKOUT_VENDOR_SECRET}`,
        'Bearer [sent]',
      ]);
    const basic = `Basic ${Buffer.from(`${BRAINTREE_PUBLIC_KEY}:${BRAINTREE_PRIVATE_KEY}`).toString('base64')}`;
    for (const sent of fakeBraintree.requests)
      vendorReceived(sent.operationName ?? 'graphql', { variables: sent.variables, headers: sent.headers }, [
        basic,
        'Basic [sent]',
      ]);
    for (const sent of fakeAdyen.requests)
      vendorReceived(`${sent.method} ${sent.path}`, { body: sent.body, headers: sent.headers }, [
        `"x-api-key":"${ADYEN_VENDOR_API_KEY}"`,
        '"x-api-key":"[sent]"',
      ]);
    const logs = t.logs.join('');

    const responseTexts = responses.map(({ body, headers }, i) => {
      let out = body;
      for (const shown of [...(shownOnce.get(i) ?? []), ...documented])
        out = out.split(shown).join('[shown]');
      return `${out}\n${JSON.stringify(headers)}`;
    });

    // Which table a dump position belongs to (COPY public.<table> ... FROM stdin).
    const tableAt = (position: number): string => {
      const copy = dump.lastIndexOf('\nCOPY ', position);
      return copy < 0 ? '?' : dump.slice(copy + 6, dump.indexOf(' ', copy + 6));
    };
    const lineAt = (text: string, position: number): string => {
      const from = text.lastIndexOf('\n', position) + 1;
      const to = text.indexOf('\n', position);
      const line = text.slice(from, to < 0 ? undefined : to);
      const at = position - from;
      return line.length <= 300 ? line : `…${line.slice(Math.max(0, at - 150), at + 150)}…`;
    };

    // The search itself finds what it looks for: a clear value stored by design, and each encoding of a
    // secret embedded at any offset of a larger encoded value.
    expect(dump).toContain(`order-${tag}`);
    for (const { value } of secrets)
      for (const prefix of ['', '{', '{"', '{"x']) {
        const embedded = Buffer.from(`${prefix}${value}"}`, 'utf8');
        const forms: Record<string, string> = {
          clear: embedded.toString('utf8'),
          base64: embedded.toString('base64'),
          base64url: embedded.toString('base64url'),
          hex: embedded.toString('hex'),
          HEX: embedded.toString('hex').toUpperCase(),
        };
        for (const { encoding, patterns } of encodings(value))
          expect({
            value,
            prefix,
            encoding,
            found: patterns.some((p) => forms[encoding].includes(p)),
          }).toEqual({
            value,
            prefix,
            encoding,
            found: true,
          });
      }

    const hits: string[] = [];
    let searched = 0;
    for (const secret of secrets) {
      for (const { encoding, patterns } of encodings(secret.value)) {
        searched++;
        for (const pattern of patterns) {
          let at = dump.indexOf(pattern);
          if (at >= 0)
            hits.push(`${secret.kind} [${encoding}] in dump table ${tableAt(at)}: ${lineAt(dump, at)}`);
          at = logs.indexOf(pattern);
          if (at >= 0) hits.push(`${secret.kind} [${encoding}] in log: ${lineAt(logs, at)}`);
          responseTexts.forEach((text, i) => {
            at = text.indexOf(pattern);
            if (at >= 0)
              hits.push(
                `${secret.kind} [${encoding}] in response ${responses[i].route}: ${lineAt(text, at)}`,
              );
          });
        }
      }
    }
    // A CVC is too short to look for as a substring: as a whole dump field and as a JSON string value.
    const fields = new Set(dump.split('\n').flatMap((line) => line.split('\t')));
    for (const [name, { cvc }] of Object.entries(CARDS)) {
      searched++;
      if (fields.has(cvc)) hits.push(`CVC (${name}) as a dump column value: ${cvc}`);
      if (dump.includes(`"${cvc}"`)) hits.push(`CVC (${name}) as a JSON string in the dump: ${cvc}`);
      const inLogs = logs.indexOf(`"${cvc}"`);
      if (inLogs >= 0) hits.push(`CVC (${name}) in log: ${lineAt(logs, inLogs)}`);
      // In a body as a JSON string; in the headers as a whole value, except counters and lengths.
      responses.forEach(({ body, headers, route }) => {
        const at = body.indexOf(`"${cvc}"`);
        if (at >= 0) hits.push(`CVC (${name}) in response ${route}: ${lineAt(body, at)}`);
        for (const [header, value] of Object.entries(headers))
          if (
            !NUMERIC_HEADERS.test(header) &&
            String(value)
              .split(/[\s,;=]+/)
              .includes(cvc)
          )
            hits.push(`CVC (${name}) in response header ${header} of ${route}: ${value}`);
      });
    }
    expect(dump).not.toContain('"cvc"');

    const bytes = {
      dump: Buffer.byteLength(dump),
      log: Buffer.byteLength(logs),
      responses: responseTexts.reduce((n, text) => n + Buffer.byteLength(text), 0),
    };
    process.stdout.write(
      `secrets scan: ${secrets.length} secrets x 5 encodings + ${Object.keys(CARDS).length} CVCs = ${searched} searches ` +
        `in ${bytes.dump} bytes of dump, ${bytes.log} bytes of log (${t.logs.length} lines), ` +
        `${bytes.responses} bytes of ${responses.length} responses: ${hits.length} hits\n` +
        hits.map((h) => `  HIT ${h}\n`).join(''),
    );
    expect(hits).toEqual([]);
  });
});
