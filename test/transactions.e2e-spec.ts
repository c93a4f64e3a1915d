import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { fromReconciliationId } from '../src/modules/orchestration/processors/reconciliation';
import { TransactionsRepository } from '../src/modules/orchestration/transactions/transactions.repository';
import { expectProblem, newApplication, newTenant, startApp, TestApp, TestTenant } from './support/app';
import {
  newConnection,
  ORCHESTRATION_PERMISSIONS,
  settleOwn,
  waitForTransaction,
} from './support/orchestration';

interface Tx {
  id: string;
  status: string;
  [field: string]: unknown;
}

describe('transactions', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let key: string;
  let stripe: string;

  beforeAll(async () => {
    t = await startApp();
    db = t.app.get(DataSource);
    tenant = await newTenant(t);
    key = (
      await newApplication(t, tenant.managementKey, {
        type: 'private',
        permissions: ORCHESTRATION_PERMISSIONS,
      })
    ).key;
    stripe = (await newConnection(t, key, { currencies: ['USD', 'EUR', 'JPY'], countries: ['US', 'DE'] })).id;
  });
  afterAll(() => t.close());

  const cardToken = async (number: string, cvc?: string, apiKey = key): Promise<string> =>
    (
      await request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', apiKey)
        .send({
          type: 'card',
          data: { number, expiration_month: 12, expiration_year: 2030, ...(cvc ? { cvc } : {}) },
        })
        .expect(201)
    ).body.id;
  const pay = (body: Record<string, unknown>, apiKey = key) =>
    request(t.http).post('/orchestration/transactions').set('BT-API-KEY', apiKey).send(body);
  const payWith = async (
    number: string,
    extra: Record<string, unknown> = {},
    cvc: string | undefined = '123',
  ) => {
    const res = await pay({
      amount: 1299,
      currency: 'USD',
      connection_id: stripe,
      token: await cardToken(number, cvc),
      ...extra,
    }).expect(201);
    return res.body as Tx;
  };
  const op = (id: string, action: string, body: object = {}, apiKey = key) =>
    request(t.http).post(`/orchestration/transactions/${id}/${action}`).set('BT-API-KEY', apiKey).send(body);

  it('approves a card: every field of the transaction object', async () => {
    const token = await cardToken('4242424242424242', '123');
    const res = await pay({
      amount: 1299,
      currency: 'USD',
      country: 'US',
      connection_id: stripe,
      token,
      external_identifier: 'order-1',
      metadata: { cart: 'c-1' },
    }).expect(201);
    const tx = res.body;
    expect(tx).toEqual({
      type: 'transaction',
      id: expect.any(String),
      reconciliation_id: expect.stringMatching(/^[0-9A-Za-z]{1,22}$/),
      status: 'authorization_succeeded',
      intent: 'authorize',
      intent_outcome: 'succeeded',
      amount: 1299,
      currency: 'USD',
      authorized_amount: 1299,
      captured_amount: 0,
      refunded_amount: 0,
      country: 'US',
      external_identifier: 'order-1',
      metadata: { cart: 'c-1' },
      payment_source: 'ecommerce',
      merchant_initiated: false,
      is_subsequent_payment: false,
      previous_scheme_transaction_id: null,
      payment_method: {
        type: 'payment-method',
        method: 'card',
        id: token,
        scheme: 'visa',
        label: '4242',
        expiration_date: '12/30',
        fingerprint: expect.any(String),
        approval_url: null,
      },
      connection: {
        id: stripe,
        connection_formula_id: 'stripe-card',
        display_name: 'Stripe test',
        method: 'card',
      },
      scheme_transaction_id: expect.stringMatching(/^\d{15}$/),
      connection_transaction_id: expect.stringMatching(/^pi_[0-9A-Za-z]{24}$/),
      error_code: null,
      auth_response_code: '00',
      cvv_response_code: 'match',
      three_d_secure: null,
      buyer: null,
      authorized_at: expect.any(String),
      captured_at: null,
      voided_at: null,
      approval_expires_at: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(fromReconciliationId(tx.reconciliation_id)).toBe(tx.id);
    const got = await request(t.http)
      .get(`/orchestration/transactions/${tx.id}`)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(got.body).toEqual(tx);
    // The CVC served that authorization and is gone; the next payment with the token sends none.
    expect((await db.query('SELECT 1 FROM token_cvcs WHERE token_id = $1', [token])).length).toBe(0);
    const again = await pay({ amount: 100, currency: 'USD', connection_id: stripe, token }).expect(201);
    expect(again.body.cvv_response_code).toBe('not_provided');
  });

  it.each([
    ['5555555555554444', 'authorization_succeeded', null, '00', 'mastercard'],
    ['378282246310005', 'authorization_succeeded', null, '00', 'amex'],
    ['6011111111111117', 'authorization_succeeded', null, '00', 'discover'],
    ['4000000000000002', 'authorization_declined', 'declined', '05', 'visa'],
    ['4000000000009995', 'authorization_declined', 'insufficient_funds', '51', 'visa'],
    ['4000000000000069', 'authorization_declined', 'expired_card', '54', 'visa'],
    ['4000000000000119', 'authorization_failed', 'service_error', null, 'visa'],
  ])('test card %s: %s (%s)', async (number, status, errorCode, authCode, scheme) => {
    const tx = await payWith(number, {}, number.startsWith('37') ? '1234' : '123');
    expect(tx).toMatchObject({ status, error_code: errorCode, auth_response_code: authCode });
    expect((tx.payment_method as { scheme: string }).scheme).toBe(scheme);
    expect(tx.intent_outcome).toBe(status === 'authorization_succeeded' ? 'succeeded' : 'failed');
    if (status !== 'authorization_succeeded') expect(tx.authorized_amount).toBe(0);
  });

  it('4000000000000127: declined for an incorrect CVC, approved without one', async () => {
    const withCvc = await payWith('4000000000000127');
    expect(withCvc).toMatchObject({
      status: 'authorization_declined',
      error_code: 'incorrect_cvv',
      cvv_response_code: 'no_match',
    });
    const withoutCvc = await payWith('4000000000000127', {
      payment_source: 'card_on_file',
      merchant_initiated: true,
    });
    expect(withoutCvc).toMatchObject({
      status: 'authorization_succeeded',
      cvv_response_code: 'not_provided',
    });
    // The first customer-initiated card_on_file or recurring payment: the cardholder is there, the CVC goes.
    for (const payment_source of ['card_on_file', 'recurring'])
      expect(await payWith('4000000000000127', { payment_source })).toMatchObject({
        status: 'authorization_declined',
        error_code: 'incorrect_cvv',
        cvv_response_code: 'no_match',
      });
    // Merchant-initiated or subsequent ones never send the CVC, even when the token still holds one.
    const recurring = await payWith('4242424242424242', {
      payment_source: 'recurring',
      merchant_initiated: true,
      is_subsequent_payment: true,
      previous_scheme_transaction_id: '123456789012345',
    });
    expect(recurring).toMatchObject({ status: 'authorization_succeeded', cvv_response_code: 'not_provided' });
  });

  it('3-D Secure data from elsewhere: the sandbox takes it as a session; checked field by field; refused where the formula has no pass-through', async () => {
    const data = { version: '2.2.0', eci: '05', cavv: 'AAABAWFlmQAAAABjRWWZEEFgFz+=' };
    const frictionless = await payWith('4000000000003220', { three_d_secure_data: data });
    expect(frictionless).toMatchObject({
      status: 'authorization_succeeded',
      three_d_secure: { version: '2.2.0', status: 'complete', method: 'frictionless' },
    });
    const token = (
      await request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', key)
        .send({
          type: 'card',
          data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
        })
        .expect(201)
    ).body.id as string;
    const refused = await pay({
      amount: 100,
      currency: 'USD',
      connection_id: stripe,
      token,
      three_d_secure_data: {
        version: '3',
        eci: '5',
        cavv: '',
        directory_response: 'YY',
        ds_transaction_id: 'x',
        extra: 1,
      },
    });
    expectProblem(refused, 400);
    expect(Object.keys(refused.body.errors).sort()).toEqual([
      'three_d_secure_data',
      'three_d_secure_data.cavv',
      'three_d_secure_data.directory_response',
      'three_d_secure_data.ds_transaction_id',
      'three_d_secure_data.eci',
      'three_d_secure_data.version',
    ]);
    expectProblem(
      await pay({ amount: 100, currency: 'USD', connection_id: stripe, token, three_d_secure_data: 'x' }),
      400,
    );
    // nmi-card has no 3-D Secure pass-through.
    const nmi = (
      await newConnection(t, key, { formulaId: 'nmi-card', currencies: ['USD'], countries: ['US'] })
    ).id;
    const noPassThrough = await pay({
      amount: 100,
      currency: 'USD',
      connection_id: nmi,
      token,
      three_d_secure_data: data,
    });
    expectProblem(noPassThrough, 400);
    expect(Object.keys(noPassThrough.body.errors)).toEqual(['three_d_secure_data']);
    expect(JSON.stringify(noPassThrough.body)).not.toContain(data.cavv);
    // The cryptogram is stored nowhere.
    const dump =
      JSON.stringify(await db.query('SELECT * FROM transactions')) +
      JSON.stringify(await db.query('SELECT * FROM audit_logs ORDER BY pos DESC LIMIT 50'));
    expect(dump).not.toContain(data.cavv);
  });

  it('3-D Secure: a session id counts as frictionless; 4000000000003063 fails with error data', async () => {
    const frictionless = await payWith('4000000000003220', { three_d_session_id: { id: 'tds_123' } });
    expect(frictionless).toMatchObject({
      status: 'authorization_succeeded',
      three_d_secure: { version: '2.2.0', status: 'complete', method: 'frictionless' },
    });
    const failed = await payWith('4000000000003063');
    expect(failed.status).toBe('authorization_failed');
    expect(failed.three_d_secure).toMatchObject({
      status: 'error',
      error_data: {
        code: '305',
        description: expect.any(String),
        detail: expect.any(Object),
        component: expect.any(Object),
      },
    });
    const challenged = await payWith('4000000000003220');
    expect(challenged).toMatchObject({ status: 'buyer_approval_pending', intent_outcome: 'pending' });
    const pm = challenged.payment_method as { approval_url: string };
    expect(pm.approval_url).toMatch(/^http:\/\/localhost:\d+\/orchestration\/approvals\/[0-9A-Za-z]{40,50}$/);
    expect(
      Date.parse(challenged.approval_expires_at as string) - Date.parse(challenged.created_at as string),
    ).toBe(15 * 60_000);
    expect(
      (await request(t.http).get(`/orchestration/transactions/${challenged.id}`).set('BT-API-KEY', key)).body
        .payment_method.approval_url,
    ).toBe(pm.approval_url);
  });

  it('intent capture captures at once', async () => {
    const tx = await payWith('4242424242424242', { intent: 'capture' });
    expect(tx).toMatchObject({
      status: 'capture_succeeded',
      intent: 'capture',
      intent_outcome: 'succeeded',
      authorized_amount: 1299,
      captured_amount: 1299,
      captured_at: expect.any(String),
    });
  });

  it('captures in full or in part where the formula allows it', async () => {
    const tx = await payWith('4242424242424242');
    expectProblem(await op(tx.id, 'capture', { amount: 1300 }), 400);
    const partial = await op(tx.id, 'capture', { amount: 1000 }).expect(200);
    expect(partial.body).toMatchObject({
      status: 'capture_succeeded',
      captured_amount: 1000,
      authorized_amount: 1299,
    });
    const twice = await op(tx.id, 'capture');
    expectProblem(twice, 409);
    expect(twice.body.detail).toContain('capture_succeeded');

    const authorizenet = (
      await newConnection(t, key, { formulaId: 'authorizenet-card', currencies: ['USD'], countries: ['US'] })
    ).id;
    const anet = (
      await pay({
        amount: 500,
        currency: 'USD',
        connection_id: authorizenet,
        token: await cardToken('4242424242424242'),
      }).expect(201)
    ).body as Tx;
    const refused = await op(anet.id, 'capture', { amount: 400 });
    expectProblem(refused, 400);
    expect(Object.keys(refused.body.errors)).toEqual(['amount']);
    const full = await op(anet.id, 'capture').expect(200);
    expect(full.body).toMatchObject({ status: 'capture_succeeded', captured_amount: 500 });
  });

  it('voids where the formula allows it; capture after void is a 409', async () => {
    const tx = await payWith('4242424242424242');
    const voided = await op(tx.id, 'void').expect(200);
    expect(voided.body).toMatchObject({ status: 'authorization_voided', voided_at: expect.any(String) });
    const capture = await op(tx.id, 'capture');
    expectProblem(capture, 409);
    expect(capture.body.detail).toContain('authorization_voided');
    expectProblem(await op(tx.id, 'void'), 409);

    const rapyd = (
      await newConnection(t, key, { formulaId: 'rapyd-card', currencies: ['USD'], countries: ['US'] })
    ).id;
    const rtx = (
      await pay({
        amount: 500,
        currency: 'USD',
        connection_id: rapyd,
        token: await cardToken('4242424242424242'),
      }).expect(201)
    ).body as Tx;
    expectProblem(await op(rtx.id, 'void'), 400);
    const after = await request(t.http)
      .get(`/orchestration/transactions/${rtx.id}`)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(after.body.status).toBe('authorization_succeeded');
  });

  it('refunds up to the captured amount, never past it', async () => {
    const tx = await payWith('4242424242424242', { intent: 'capture' });
    expectProblem(await op(tx.id, 'refunds', { amount: 1300 }), 400);
    const first = await op(tx.id, 'refunds', { amount: 299 }).expect(201);
    expect(first.body).toEqual({
      type: 'refund',
      id: expect.any(String),
      transaction_id: tx.id,
      amount: 299,
      currency: 'USD',
      status: 'succeeded',
      created_at: expect.any(String),
    });
    const past = await op(tx.id, 'refunds', { amount: 1001 });
    expectProblem(past, 400);
    expect(Object.keys(past.body.errors)).toEqual(['amount']);
    const rest = await op(tx.id, 'refunds').expect(201);
    expect(rest.body.amount).toBe(1000);
    expectProblem(await op(tx.id, 'refunds'), 409);
    const after = await request(t.http)
      .get(`/orchestration/transactions/${tx.id}`)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(after.body).toMatchObject({
      status: 'capture_succeeded',
      captured_amount: 1299,
      refunded_amount: 1299,
    });
    const list = await request(t.http)
      .get(`/orchestration/transactions/${tx.id}/refunds`)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(list.body.data.map((r: { amount: number }) => r.amount)).toEqual([299, 1000]);
    expect(list.body.pagination.total_items).toBe(2);

    // Refunding an uncaptured authorization is a state conflict; elavon refunds only in full.
    const uncaptured = await payWith('4242424242424242');
    expectProblem(await op(uncaptured.id, 'refunds'), 409);
    const elavon = (
      await newConnection(t, key, { formulaId: 'elavon-card', currencies: ['USD'], countries: ['US'] })
    ).id;
    const etx = (
      await pay({
        amount: 800,
        currency: 'USD',
        connection_id: elavon,
        token: await cardToken('4242424242424242'),
        intent: 'capture',
      }).expect(201)
    ).body as Tx;
    expectProblem(await op(etx.id, 'refunds', { amount: 100 }), 400);
    await op(etx.id, 'refunds').expect(201);
  });

  it('an asynchronous capture goes capture_pending and settles to capture_succeeded', async () => {
    const tx = await payWith('4000000000000259');
    expect(tx.status).toBe('authorization_succeeded');
    const pending = await op(tx.id, 'capture').expect(200);
    expect(pending.body).toMatchObject({
      status: 'capture_pending',
      captured_amount: 0,
      intent_outcome: 'succeeded',
    });
    const settled = await waitForTransaction(t, key, tx.id, (x) => x.status !== 'capture_pending');
    expect(settled).toMatchObject({ status: 'capture_succeeded', captured_amount: 1299 });
  });

  it('an asynchronous void goes authorization_void_pending and settles to authorization_voided', async () => {
    const tx = await payWith('4000000000000259');
    const pending = await op(tx.id, 'void').expect(200);
    expect(pending.body.status).toBe('authorization_void_pending');
    expectProblem(await op(tx.id, 'capture'), 409);
    const settled = await waitForTransaction(t, key, tx.id, (x) => x.status !== 'authorization_void_pending');
    expect(settled).toMatchObject({ status: 'authorization_voided', voided_at: expect.any(String) });
  });

  it('refuses bad input by field, creating nothing', async () => {
    const token = await cardToken('4242424242424242');
    const before = (
      await db.query('SELECT count(*)::int AS n FROM transactions WHERE tenant_id = $1', [tenant.tenantId])
    )[0].n;
    const dlocal = (
      await newConnection(t, key, { formulaId: 'dlocal-card', currencies: ['USD'], countries: ['BR'] })
    ).id;
    const inactive = (await newConnection(t, key, { active: false, currencies: ['USD'], countries: ['US'] }))
      .id;
    const failed = (
      await newConnection(t, key, { secret: 'invalid', currencies: ['USD'], countries: ['US'] })
    ).id;
    const base = { amount: 100, currency: 'USD', connection_id: stripe, token };
    const cases: [Record<string, unknown>, string][] = [
      [{ amount: -1 }, 'amount'],
      [{ amount: 100_000_000 }, 'amount'],
      [{ amount: 1.5 }, 'amount'],
      [{ amount: 0, connection_id: dlocal }, 'amount'],
      [{ currency: 'GBP' }, 'currency'],
      [{ currency: 'usd' }, 'currency'],
      [{ country: 'FR' }, 'country'],
      [{ connection_id: inactive }, 'connection_id'],
      [{ connection_id: failed }, 'connection_id'],
      [{ connection_id: randomUUID() }, 'connection_id'],
      [{ token: randomUUID() }, 'token'],
      [
        {
          token: await request(t.http)
            .post('/tokenize')
            .set('BT-API-KEY', key)
            .send({ type: 'token', data: 'x' })
            .then((r) => r.body.id as string),
        },
        'token',
      ],
      [{ payment_source: 'moto' }, 'payment_source'],
      [{ intent: 'sale' }, 'intent'],
      [{ is_subsequent_payment: true }, 'previous_scheme_transaction_id'],
      [{ metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata'],
      [{ metadata: { k: 1 } }, 'metadata.k'],
      [{ external_identifier: 'x'.repeat(201) }, 'external_identifier'],
      [{ three_d_session_id: 42 }, 'three_d_session_id'],
    ];
    for (const [override, path] of cases) {
      const res = await pay({ ...base, ...override });
      expectProblem(res, 400);
      expect({ override, paths: Object.keys(res.body.errors ?? {}) }).toEqual({ override, paths: [path] });
    }
    // Zero-amount authorization where the formula supports it.
    await pay({ ...base, amount: 0 }).expect(201);
    const after = (
      await db.query('SELECT count(*)::int AS n FROM transactions WHERE tenant_id = $1', [tenant.tenantId])
    )[0].n;
    expect(after).toBe(before + 1);
  });

  it('lists with filters and offset pagination', async () => {
    const ref = `list-${randomUUID()}`;
    for (let i = 0; i < 3; i++) await payWith('4242424242424242', { external_identifier: ref });
    const page = await request(t.http)
      .get('/orchestration/transactions')
      .query({ external_identifier: ref, size: 2 })
      .set('BT-API-KEY', key)
      .expect(200);
    expect(page.body.pagination).toEqual({ total_items: 3, page_number: 1, page_size: 2, total_pages: 2 });
    expect(page.body.data).toHaveLength(2);
    const declined = await request(t.http)
      .get('/orchestration/transactions')
      .query({ status: 'authorization_declined', connection_id: stripe, size: 100 })
      .set('BT-API-KEY', key)
      .expect(200);
    expect(declined.body.data.every((x: Tx) => x.status === 'authorization_declined')).toBe(true);
    expectProblem(
      await request(t.http)
        .get('/orchestration/transactions')
        .query({ status: 'nope' })
        .set('BT-API-KEY', key),
      400,
    );
  });

  it("another tenant's transactions and connections are 404 to it", async () => {
    const tx = await payWith('4242424242424242');
    const other = await newTenant(t, 'other');
    const theirKey = (
      await newApplication(t, other.managementKey, {
        type: 'private',
        permissions: ORCHESTRATION_PERMISSIONS,
      })
    ).key;
    expectProblem(
      await request(t.http).get(`/orchestration/transactions/${tx.id}`).set('BT-API-KEY', theirKey),
      404,
    );
    expectProblem(await op(tx.id, 'capture', {}, theirKey), 404);
    expectProblem(await op(tx.id, 'void', {}, theirKey), 404);
    expectProblem(await op(tx.id, 'refunds', {}, theirKey), 404);
    expectProblem(
      await request(t.http).get(`/orchestration/transactions/${tx.id}/refunds`).set('BT-API-KEY', theirKey),
      404,
    );
    const list = await request(t.http)
      .get('/orchestration/transactions')
      .set('BT-API-KEY', theirKey)
      .expect(200);
    expect(list.body.data).toEqual([]);
    // Their token on our connection, or ours on theirs: the other side's id is unknown.
    const theirToken = await cardToken('4242424242424242', undefined, theirKey);
    const res = await pay(
      { amount: 100, currency: 'USD', connection_id: stripe, token: theirToken },
      theirKey,
    );
    expectProblem(res, 400);
    expect(Object.keys(res.body.errors)).toEqual(['connection_id']);
    const mine = await pay({ amount: 100, currency: 'USD', connection_id: stripe, token: theirToken });
    expectProblem(mine, 400);
    expect(Object.keys(mine.body.errors)).toEqual(['token']);
  });

  it('checks token:use on the token through rules: a session may pay with its one token only', async () => {
    const allowed = await cardToken('4242424242424242');
    const other = await cardToken('5555555555554444');
    const pub = await newApplication(t, tenant.managementKey, {
      type: 'public',
      permissions: ['token:create'],
    });
    const session = (await request(t.http).post('/sessions').set('BT-API-KEY', pub.key).expect(201)).body;
    await request(t.http)
      .post('/sessions/authorize')
      .set('BT-API-KEY', key)
      .send({
        nonce: session.nonce,
        rules: [
          {
            priority: 1,
            conditions: [{ attribute: 'id', operator: 'equals', value: allowed }],
            permissions: ['token:use'],
          },
        ],
      })
      .expect(204);
    await pay(
      { amount: 100, currency: 'USD', connection_id: stripe, token: allowed },
      session.session_key,
    ).expect(201);
    const refused = await pay(
      { amount: 100, currency: 'USD', connection_id: stripe, token: other },
      session.session_key,
    );
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(500);
    expect(refused.status).not.toBe(201);
    // Capture needs its own permission.
    const readOnly = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ['orchestration:transactions:read'],
    });
    const tx = await payWith('4242424242424242');
    expectProblem(await op(tx.id, 'capture', {}, readOnly.key), 403);
    expectProblem(
      await pay({ amount: 1, currency: 'USD', connection_id: stripe, token: allowed }, readOnly.key),
      403,
    );
  });

  it('a transaction left in processing by a crash is resolved by the job', async () => {
    const token = await cardToken('4242424242424242');
    const id = randomUUID();
    const longAgo = new Date(Date.now() - 5 * 60_000);
    await db.query(
      `INSERT INTO transactions (id, tenant_id, connection_id, token_id, status, pending_operation, pending_since, intent, amount,
          currency, payment_source, merchant_initiated, is_subsequent_payment, payment_method, created_at, updated_at)
       VALUES ($1, $2, $3, $4, 'processing', 'authorize', $5, 'authorize', 700, 'USD', 'ecommerce', false, false,
               '{"scheme":"visa","label":"4242","expiration_date":"12/30","fingerprint":"f"}', $5, $5)`,
      [id, tenant.tenantId, stripe, token, longAgo],
    );
    // A fresh `processing` row (a request still talking to its processor) is left alone.
    const fresh = randomUUID();
    await db.query(
      `INSERT INTO transactions (id, tenant_id, connection_id, token_id, status, pending_operation, pending_since, intent, amount,
          currency, payment_source, merchant_initiated, is_subsequent_payment, payment_method, created_at, updated_at)
       SELECT $1, tenant_id, connection_id, token_id, status, pending_operation, now(), intent, amount, currency, payment_source,
              merchant_initiated, is_subsequent_payment, payment_method, now(), now() FROM transactions WHERE id = $2`,
      [fresh, id],
    );
    await settleOwn(t);
    const resolved = await request(t.http)
      .get(`/orchestration/transactions/${id}`)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(resolved.body).toMatchObject({
      status: 'authorization_failed',
      error_code: 'processor_timeout',
      intent_outcome: 'failed',
    });
    const untouched = await request(t.http)
      .get(`/orchestration/transactions/${fresh}`)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(untouched.body.status).toBe('processing');
    await db.query(`UPDATE transactions SET status = 'authorization_failed' WHERE id = $1`, [fresh]);

    // A capture interrupted mid-call goes back to authorization_succeeded, to be captured again.
    const tx = await payWith('4242424242424242');
    await db.query(
      `UPDATE transactions SET status = 'processing', previous_status = 'authorization_succeeded', pending_operation = 'capture',
              pending_since = $2, pending_amount = 1299 WHERE id = $1`,
      [tx.id, longAgo],
    );
    await settleOwn(t);
    const back = await request(t.http)
      .get(`/orchestration/transactions/${tx.id}`)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(back.body.status).toBe('authorization_succeeded');
    await op(tx.id, 'capture').expect(200);
  });

  it('a transaction interrupted between the processor call and the update is settled once, never charged twice', async () => {
    const token = await cardToken('4242424242424242');
    const idem = randomUUID();
    const send = () =>
      request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', key)
        .set('BT-IDEMPOTENCY-KEY', idem)
        .send({ amount: 777, currency: 'USD', connection_id: stripe, token, intent: 'capture' });
    const repository = t.app.get(TransactionsRepository);
    const spy = jest.spyOn(repository, 'apply').mockRejectedValueOnce(new Error('connection lost'));
    let first: request.Response;
    try {
      first = await send().expect(201);
    } finally {
      spy.mockRestore();
    }
    expect(first.body).toMatchObject({ status: 'processing', intent_outcome: 'pending' });
    // The retry replays the stored answer instead of charging again.
    const retry = await send().expect(201);
    expect(retry.headers['bt-idempotency-replayed']).toBe('true');
    expect(retry.body.id).toBe(first.body.id);
    expect(
      (await db.query('SELECT count(*)::int AS n FROM transactions WHERE token_id = $1', [token]))[0].n,
    ).toBe(1);
    // A minute later the settlement job asks the processor, which did capture it.
    await settleOwn(t, { after: 61 });
    const settled = await request(t.http)
      .get(`/orchestration/transactions/${first.body.id}`)
      .set('BT-API-KEY', key)
      .expect(200);
    expect(settled.body).toMatchObject({
      status: 'capture_succeeded',
      captured_amount: 777,
      intent_outcome: 'succeeded',
    });
  });

  it('stores no card number or CVC with transactions, and logs each operation', async () => {
    const tx = await payWith('6011111111111117', {}, '987');
    await op(tx.id, 'capture').expect(200);
    await op(tx.id, 'refunds').expect(201);
    const dump = execFileSync(
      'pg_dump',
      [
        '--data-only',
        '--table=transactions',
        '--table=refunds',
        '--table=audit_logs',
        process.env.DATABASE_URL!,
      ],
      {
        encoding: 'utf8',
        maxBuffer: 512 * 1024 * 1024,
      },
    );
    expect(dump).toContain(tx.id);
    expect(dump).not.toContain('6011111111111117');
    // The CVC as a whole field of this payment's rows (elsewhere in the shared database small integers,
    // such as audit sequence numbers, could equal a three-digit CVC by chance).
    const paymentRows = execFileSync(
      'pg_dump',
      ['--data-only', '--table=transactions', '--table=refunds', process.env.DATABASE_URL!],
      { encoding: 'utf8', maxBuffer: 512 * 1024 * 1024 },
    );
    const mine = paymentRows.split('\n').filter((line) => line.includes(tx.id));
    expect(mine.length).toBeGreaterThan(0);
    expect(mine.flatMap((line) => line.split('\t'))).not.toContain('987');
    expect(t.logs.join('\n')).not.toContain('6011111111111117');
    const logs = await request(t.http)
      .get('/logs')
      .query({ entity_type: 'transaction', entity_id: tx.id })
      .set('BT-API-KEY', tenant.managementKey)
      .expect(200);
    expect(logs.body.data.map((l: { operation: string }) => l.operation)).toEqual([
      'update',
      'update',
      'create',
    ]);
  });

  it('a retried create with an idempotency key charges once', async () => {
    const token = await cardToken('4242424242424242');
    const idem = randomUUID();
    const send = () =>
      request(t.http)
        .post('/orchestration/transactions')
        .set('BT-API-KEY', key)
        .set('BT-IDEMPOTENCY-KEY', idem)
        .send({ amount: 4200, currency: 'USD', connection_id: stripe, token });
    const responses = await Promise.all([send(), send(), send(), send(), send()]);
    const processed = responses.filter((r) => r.status === 201 && !r.headers['bt-idempotency-replayed']);
    expect(processed).toHaveLength(1);
    expect(responses.every((r) => r.status === 201 || r.status === 409)).toBe(true);
    const replay = await send().expect(201);
    expect(replay.headers['bt-idempotency-replayed']).toBe('true');
    expect(replay.body.id).toBe(processed[0].body.id);
    const rows = await db.query('SELECT count(*)::int AS n FROM transactions WHERE token_id = $1', [token]);
    expect(rows[0].n).toBe(1);
  });
});
