import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import type { Principal } from '../src/common/auth/principal';
import { ProblemException } from '../src/common/errors/problem.exception';
import { Clock } from '../src/common/jobs/clock';
import { UnitOfWork } from '../src/common/unit-of-work/unit-of-work';
import { IdempotencyScope, IdempotencyService } from '../src/modules/idempotency/idempotency.service';
import { RequestClaim } from '../src/modules/idempotency/request-claim';
import type {
  AuthorizeRequest,
  AuthorizeResult,
} from '../src/modules/orchestration/processors/processor.port';
import { SandboxProcessor } from '../src/modules/orchestration/processors/sandbox.processor';
import { TransactionQueriesService } from '../src/modules/orchestration/transactions/transaction-queries.service';
import type {
  CreateTransactionDto,
  TransactionDto,
} from '../src/modules/orchestration/transactions/transaction.dto';
import { TransactionCreationService } from '../src/modules/orchestration/transactions/transaction-creation.service';
import {
  expectProblem,
  newApplication,
  newTenant,
  privatePrincipal,
  startApp,
  TestApp,
  TestTenant,
} from './support/app';
import { newConnection, ORCHESTRATION_PERMISSIONS } from './support/orchestration';
import { waitFor } from './support/wait';

const KEY_HEADER = 'BT-IDEMPOTENCY-KEY';
const PATH = '/orchestration/transactions';
const DAY_MS = 24 * 60 * 60_000;
/** The sandbox's own authorize, before the tests spy on it (called with the processor as `this`). */
const realAuthorize = Object.getOwnPropertyDescriptor(SandboxProcessor.prototype, 'authorize')!.value as (
  this: SandboxProcessor,
  request: AuthorizeRequest,
) => Promise<AuthorizeResult>;

interface Caller {
  tenant: TestTenant;
  app: { id: string; key: string };
  connection: string;
}

/**
 * A request that created a transaction and then lost its process (docs/idempotency.md): the retry that
 * takes over its stale claim answers THAT transaction, never a second one (a second vendor payment).
 * The crash is simulated without killing: the request runs through the service on a claim that is
 * never completed, as a process dying after its commit leaves it; test/faults kills a real server.
 */
describe('idempotency: a retry after a crash answers the resource its request created', () => {
  let t: TestApp;
  let db: DataSource;
  let me: Caller;
  let authorize: jest.SpyInstance;

  const caller = async (name: string): Promise<Caller> => {
    const tenant = await newTenant(t, name);
    const app = await newApplication(t, tenant.managementKey, {
      type: 'private',
      permissions: ORCHESTRATION_PERMISSIONS,
    });
    return { tenant, app, connection: (await newConnection(t, app.key, { currencies: ['USD'] })).id };
  };
  const principal = (c: Caller): Principal => ({
    ...privatePrincipal(c.tenant.tenantId, ORCHESTRATION_PERMISSIONS),
    applicationId: c.app.id,
  });
  const paymentBody = async (c: Caller = me) => ({
    amount: 1500,
    currency: 'USD',
    connection_id: c.connection,
    token: (
      await request(t.http)
        .post('/tokenize')
        .set('BT-API-KEY', c.app.key)
        .send({
          type: 'card',
          data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 },
        })
        .expect(201)
    ).body.id as string,
  });
  const pay = (body: object, key: string, c: Caller = me) =>
    request(t.http).post(PATH).set('BT-API-KEY', c.app.key).set(KEY_HEADER, key).send(body);

  /**
   * The claim as the idempotency interceptor hands it to the handler (`@Origin()`); the service's changes
   * are `partOf` the request, so its response is never recorded here (the interceptor would, after).
   */
  const requestClaim = (scope: IdempotencyScope, claimId: string, resumed?: string): RequestClaim =>
    new RequestClaim(t.app.get(IdempotencyService), scope, claimId, resumed, () => {
      throw new Error('the response is recorded by the interceptor, after the handler');
    });

  /** What a process that died after committing the transaction leaves: the claim, pinned, never completed. */
  const interrupted = async (body: object, key: string, c: Caller = me): Promise<TransactionDto> => {
    const idempotency = t.app.get(IdempotencyService);
    const scope = await idempotency.scopeFor(principal(c), key, { method: 'POST', path: PATH, body });
    const claim = await idempotency.claim(scope);
    if (claim.kind !== 'claimed') throw new Error(`not claimed: ${claim.kind}`);
    return t.app
      .get(TransactionCreationService)
      .create(
        { actor: principal(c), idempotency: requestClaim(scope, claim.claimId, claim.resumed) },
        body as CreateTransactionDto,
      );
  };
  const transactions = async (c: Caller = me): Promise<number> =>
    (
      await db.query(`SELECT count(*)::int AS n FROM transactions WHERE tenant_id = $1`, [c.tenant.tenantId])
    )[0].n;
  const pinned = async (transactionId: string): Promise<number> =>
    (
      await db.query(`SELECT count(*)::int AS n FROM idempotency_records WHERE resource_id = $1`, [
        transactionId,
      ])
    )[0].n;

  beforeAll(async () => {
    // No jobs: the settlement job would settle the `processing` transactions once the clock is moved.
    t = await startApp({ JOBS_ENABLED: 'false' });
    db = t.app.get(DataSource);
    me = await caller('resources');
  });
  afterAll(() => t.close());
  beforeEach(() => {
    authorize = jest.spyOn(SandboxProcessor.prototype, 'authorize');
  });
  afterEach(() => {
    authorize.mockRestore();
    t.app.get(Clock).reset();
  });

  it('the retry after the claim timeout answers the first transaction: one transaction, one processor call', async () => {
    const body = await paymentBody();
    const key = randomUUID();
    const before = await transactions();
    const first = await interrupted(body, key);
    expect(await pinned(first.id)).toBe(1);
    // The claim holds for 60 s: a retry meanwhile is told to wait.
    const busy = await pay(body, key);
    expectProblem(busy, 409);
    expect(busy.headers['retry-after']).toBe('1');

    t.app.get(Clock).advance(61_000);
    const retry = await pay(body, key).expect(201);
    expect(retry.headers['bt-idempotency-replayed']).toBeUndefined();
    expect(retry.body.id).toBe(first.id);
    expect(retry.body.status).toBe(first.status);
    expect(await transactions()).toBe(before + 1);
    expect(authorize).toHaveBeenCalledTimes(1);
    // Stored as the key's response (2xx), the pin with it.
    const replay = await pay(body, key).expect(201);
    expect(replay.headers['bt-idempotency-replayed']).toBe('true');
    expect(replay.text).toBe(retry.text);
    const [record] = await db.query(
      `SELECT state, resource_id FROM idempotency_records WHERE resource_id = $1`,
      [first.id],
    );
    expect(record).toEqual({ state: 'completed', resource_id: first.id });
  });

  it('a request still waiting for its processor when its claim goes stale: the retry answers its transaction', async () => {
    const body = await paymentBody();
    const key = randomUUID();
    const before = await transactions();
    let answer: (() => void) | undefined;
    authorize.mockImplementationOnce(function (this: SandboxProcessor, req: AuthorizeRequest) {
      const result = realAuthorize.call(this, req);
      return new Promise((resolve) => (answer = () => resolve(result)));
    });
    const first = pay(body, key).then((res) => res);
    const id = await waitFor(
      async () => {
        const rows = await db.query(
          `SELECT t.id FROM transactions t JOIN idempotency_records r ON r.resource_id = t.id
            WHERE t.tenant_id = $1 AND t.created_at > now() - interval '1 minute' AND r.state = 'processing'`,
          [me.tenant.tenantId],
        );
        return rows[0]?.id as string | undefined;
      },
      { timeoutMs: 5_000, intervalMs: 50, what: 'the transaction pinned on the claim' },
    );
    expect(id).toBeDefined();
    expect(answer).toBeDefined();

    t.app.get(Clock).advance(61_000);
    const retry = await pay(body, key).expect(201);
    expect(retry.body).toMatchObject({ id, status: 'processing' });
    // The first request ends later: its outcome is written, but the key keeps the retry's answer.
    answer!();
    const late = await first;
    expect(late.status).toBe(201);
    expect(late.body).toMatchObject({ id, status: 'authorization_succeeded' });
    expect((await pay(body, key).expect(201)).text).toBe(retry.text);
    expect(await transactions()).toBe(before + 1);
    expect(authorize).toHaveBeenCalledTimes(1);
  });

  it('a different key, or the same key past its 24-hour lifetime, creates a new transaction', async () => {
    const body = await paymentBody();
    const key = randomUUID();
    const first = await interrupted(body, key);
    const clock = t.app.get(Clock);
    clock.advance(61_000);
    const other = await pay(body, randomUUID()).expect(201);
    expect(other.body.id).not.toBe(first.id);

    const oldKey = randomUUID();
    const oldBody = await paymentBody();
    const pinnedOld = await interrupted(oldBody, oldKey);
    clock.advance(DAY_MS + 1_000);
    const fresh = await pay(oldBody, oldKey).expect(201);
    expect(fresh.body.id).not.toBe(pinnedOld.id);
    expect(await pinned(pinnedOld.id)).toBe(0);
    expect(authorize).toHaveBeenCalledTimes(4);
  });

  it('the pin belongs to the tenant and application: another caller with the same key makes its own', async () => {
    const key = randomUUID();
    const first = await interrupted(await paymentBody(), key);
    const sibling = {
      ...me,
      app: await newApplication(t, me.tenant.managementKey, {
        type: 'private',
        permissions: ORCHESTRATION_PERMISSIONS,
      }),
    };
    const stranger = await caller('stranger');
    t.app.get(Clock).advance(61_000);
    for (const c of [sibling, stranger]) {
      const before = await transactions(c);
      const res = await pay(await paymentBody(c), key, c).expect(201);
      expect(res.headers['bt-idempotency-replayed']).toBeUndefined();
      expect(res.body.id).not.toBe(first.id);
      expect(await transactions(c)).toBe(before + 1);
    }
  });

  it('the same key with another request cannot take a pinned claim over: 422', async () => {
    const key = randomUUID();
    await interrupted(await paymentBody(), key);
    t.app.get(Clock).advance(61_000);
    const before = await transactions();
    expectProblem(await pay(await paymentBody(), key), 422);
    expect(await transactions()).toBe(before);
  });

  it('a failed retry keeps the pin: the next one answers the transaction at once', async () => {
    const body = await paymentBody();
    const key = randomUUID();
    const first = await interrupted(body, key);
    t.app.get(Clock).advance(61_000);
    const get = jest
      .spyOn(TransactionQueriesService.prototype, 'get')
      .mockRejectedValueOnce(new Error('database gone'));
    try {
      expect((await pay(body, key)).status).toBe(500);
    } finally {
      get.mockRestore();
    }
    const retry = await pay(body, key).expect(201);
    expect(retry.body.id).toBe(first.id);
    expect(authorize).toHaveBeenCalledTimes(1);
  });

  it('a request whose claim was taken over before its commit creates nothing (409, rolled back)', async () => {
    const body = await paymentBody();
    const key = randomUUID();
    const idempotency = t.app.get(IdempotencyService);
    const scope = await idempotency.scopeFor(principal(me), key, { method: 'POST', path: PATH, body });
    const slow = await idempotency.claim(scope);
    if (slow.kind !== 'claimed') throw new Error('not claimed');
    t.app.get(Clock).advance(61_000);
    const taken = await idempotency.claim(scope);
    expect(taken.kind).toBe('claimed');
    const before = await transactions();
    const late = t.app
      .get(TransactionCreationService)
      .create({ actor: principal(me), idempotency: requestClaim(scope, slow.claimId) }, body);
    const refused: unknown = await late.catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ProblemException);
    expect((refused as ProblemException).getStatus()).toBe(409);
    expect(await transactions()).toBe(before);
    expect(authorize).not.toHaveBeenCalled();
  });

  it('without a key, pin does nothing and nothing is resumed', async () => {
    await t.app.get(UnitOfWork).transaction({}, async (change) => {
      expect(change.resumed).toBeUndefined();
      await change.pinResource(randomUUID());
    });
    const res = await request(t.http)
      .post(PATH)
      .set('BT-API-KEY', me.app.key)
      .send(await paymentBody())
      .expect(201);
    expect(await pinned(res.body.id)).toBe(0);
  });
});
