import request from 'supertest';
import { DataSource } from 'typeorm';
import { expectProblem, TestApp, TestTenant } from '../support/app';
import { cardData, luhnCard, tokenize, scene } from '../support/attacker';

/**
 * Abuse class: replayed credentials (docs/reliability.md). A public key is shared by every browser of
 * a shop, so a second holder sending the same `BT-IDEMPOTENCY-KEY` must never receive the first
 * holder's session key (which a private application may authorize later): `POST /sessions` creates a
 * new session on every call and stores nothing for replay.
 */
describe('abuse: idempotency never replays a credential', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TestTenant;
  let pub: string;
  let pvt: string;

  beforeAll(async () => {
    const s = await scene('idempotency abuse', {
      pub: { type: 'public', permissions: ['token:create'] },
      pvt: { type: 'private', permissions: ['token:create', 'token:read'] },
    });
    ({ t, db, tenant } = s);
    ({ pub, pvt } = s.keys);
  });
  afterAll(() => t.close());

  it('a second holder of the public key with the same idempotency key gets a session of its own, not the first one', async () => {
    const idempotencyKey = 'checkout-cart-1234';
    const victim = await request(t.http)
      .post('/sessions')
      .set('BT-API-KEY', pub)
      .set('BT-IDEMPOTENCY-KEY', idempotencyKey)
      .expect(201);
    await request(t.http)
      .post('/sessions/authorize')
      .set('BT-API-KEY', pvt)
      .send({ nonce: victim.body.nonce, permissions: ['token:read'] })
      .expect(204);
    const token = (await tokenize(t, pvt, { type: 'card', data: cardData(luhnCard()) }).expect(201)).body.id;
    await request(t.http).get(`/tokens/${token}`).set('BT-API-KEY', victim.body.session_key).expect(200);

    const attacker = await request(t.http)
      .post('/sessions')
      .set('BT-API-KEY', pub)
      .set('BT-IDEMPOTENCY-KEY', idempotencyKey)
      .expect(201);
    expect(attacker.headers['bt-idempotency-replayed']).toBeUndefined();
    expect(attacker.body.session_key).not.toBe(victim.body.session_key);
    expect(attacker.body.nonce).not.toBe(victim.body.nonce);
    expectProblem(
      await request(t.http).get(`/tokens/${token}`).set('BT-API-KEY', attacker.body.session_key),
      403,
    );

    // Concurrent calls with one key: each a session of its own, never a 409 nor a replay.
    const burst = await Promise.all(
      Array.from({ length: 10 }, () =>
        request(t.http).post('/sessions').set('BT-API-KEY', pub).set('BT-IDEMPOTENCY-KEY', 'burst-key'),
      ),
    );
    expect(burst.map((r) => r.status)).toEqual(Array(10).fill(201));
    expect(new Set(burst.map((r) => r.body.session_key)).size).toBe(10);

    const [{ n }] = await db.query(
      // Nothing else in this tenant is sent with an idempotency key: any record would be a session's.
      'SELECT count(*)::int AS n FROM idempotency_records WHERE tenant_id = $1',
      [tenant.tenantId],
    );
    expect(n).toBe(0);
  });
});
