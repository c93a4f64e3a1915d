import { randomUUID } from 'node:crypto';
import { StoppedClock } from '../../../test/support/stopped-clock';
import {
  openServiceDatabase,
  principalOf,
  type ServiceDatabase,
} from '../../../test/support/service-database';
import type { Principal } from '../../common/auth/principal';
import type { RetentionJob, RetentionPolicy } from '../../common/jobs/retention.job';
import { IdempotencyRepository } from './idempotency.repository';
import {
  CLAIM_TIMEOUT_MS,
  IdempotencyService,
  RECORD_LIFETIME_MS,
  type IdempotencyScope,
  type StoredResponse,
} from './idempotency.service';

/**
 * Idempotency records on the real SQL: a key is claimed once per tenant and caller, a second request is
 * in flight, replayed or refused as another request; a stale claim is taken over, a failed one given back,
 * and a response stored with the change it answers or not at all.
 */
let db: ServiceDatabase;
/** The service's clock: it moves only when a test advances it. */
const clock = new StoppedClock();
let service: IdempotencyService;
let purge: RetentionPolicy;
let tenant: string;
let other: string;

beforeAll(async () => {
  db = await openServiceDatabase();
  const retention = { register: (policy: RetentionPolicy) => (purge = policy) } as unknown as RetentionJob;
  service = new IdempotencyService(new IdempotencyRepository(db.dataSource), db.tenantKeys, clock, retention);
  service.onModuleInit();
  tenant = await db.newTenant('mine');
  other = await db.newTenant('other');
});
afterAll(() => db.close());
afterEach(() => clock.reset());

let n = 0;
/** A key never used before in this file. */
const freshKey = () => `key-${++n}`;
const request = (body: unknown = { amount: 1 }) => ({ method: 'POST', path: '/tokens', body });
const ok = (text: string): StoredResponse => ({
  status: 201,
  headers: { 'content-type': 'application/json' },
  body: Buffer.from(text),
});
const recordsOf = (tenantId: string) =>
  db.rows<{ state: string; response_body: Buffer | null; resource_id: string | null }>(
    'SELECT state, response_body, resource_id FROM idempotency_records WHERE tenant_id = $1',
    [tenantId],
  );

async function claimed(scope: IdempotencyScope): Promise<string> {
  const outcome = await service.claim(scope);
  if (outcome.kind !== 'claimed') throw new Error(`expected a claim, got ${outcome.kind}`);
  return outcome.claimId;
}

describe('scopeFor', () => {
  const app = principalOf('00000000-0000-4000-8000-000000000000');

  it("scopes a key to the caller's application, or its session", async () => {
    const who = principalOf(tenant);
    expect((await service.scopeFor(who, 'k', request())).scope).toBe(`application:${who.applicationId}`);
    const session: Principal = {
      ...who,
      keyKind: 'session',
      sessionId: '00000000-0000-4000-a000-000000000001',
    };
    expect((await service.scopeFor(session, 'k', request())).scope).toBe(
      'session:00000000-0000-4000-a000-000000000001',
    );
  });

  it('digests the key and the request under the tenant: the same key in another tenant is another', async () => {
    const mine = await service.scopeFor({ ...app, tenantId: tenant }, 'k', request());
    const theirs = await service.scopeFor({ ...app, tenantId: other }, 'k', request());
    expect(mine.keyDigest.equals(theirs.keyDigest)).toBe(false);
    expect(mine.requestDigest.equals(theirs.requestDigest)).toBe(false);
  });

  it('takes the body in canonical form: the order of its fields does not matter, its values do', async () => {
    const who = principalOf(tenant);
    const a = await service.scopeFor(who, 'k', request({ a: 1, b: { c: 2, d: 3 } }));
    const b = await service.scopeFor(who, 'k', request({ b: { d: 3, c: 2 }, a: 1 }));
    const c = await service.scopeFor(who, 'k', request({ a: 1, b: { c: 2, d: 4 } }));
    expect(a.requestDigest.equals(b.requestDigest)).toBe(true);
    expect(a.requestDigest.equals(c.requestDigest)).toBe(false);
    const path = await service.scopeFor(who, 'k', {
      ...request({ a: 1, b: { c: 2, d: 3 } }),
      path: '/other',
    });
    expect(a.requestDigest.equals(path.requestDigest)).toBe(false);
  });
});

describe('claim', () => {
  it('claims a new key, and says a second request with it is in flight', async () => {
    const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
    await claimed(scope);
    expect(await service.claim(scope)).toEqual({ kind: 'in-flight' });
  });

  it('refuses the key for another request (mismatch), in flight or completed', async () => {
    const who = principalOf(tenant);
    const key = freshKey();
    const scope = await service.scopeFor(who, key, request({ amount: 1 }));
    const claimId = await claimed(scope);
    const another = await service.scopeFor(who, key, request({ amount: 2 }));
    expect(await service.claim(another)).toEqual({ kind: 'mismatch' });
    expect(await service.complete(scope, claimId, ok('{"id":"tok_1"}'))).toBe(true);
    expect(await service.claim(another)).toEqual({ kind: 'mismatch' });
  });

  it('replays the completed response, the body stored sealed', async () => {
    const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
    const claimId = await claimed(scope);
    await service.complete(scope, claimId, ok('{"id":"tok_secret_answer"}'));
    const replay = await service.claim(scope);
    expect(replay).toEqual({ kind: 'replay', response: ok('{"id":"tok_secret_answer"}') });
    const stored = (await recordsOf(tenant)).find((r) => r.state === 'completed' && r.response_body);
    expect(stored!.response_body!.toString('latin1')).not.toContain('tok_secret_answer');
  });

  it('replays an empty body as empty (a 204)', async () => {
    const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
    const claimId = await claimed(scope);
    await service.complete(scope, claimId, { status: 204, headers: {}, body: Buffer.alloc(0) });
    expect(await service.claim(scope)).toEqual({
      kind: 'replay',
      response: { status: 204, headers: {}, body: Buffer.alloc(0) },
    });
  });

  it('keeps callers and tenants apart: the same key is free for another application and another tenant', async () => {
    const key = freshKey();
    const mine = principalOf(tenant);
    await claimed(await service.scopeFor(mine, key, request()));
    await claimed(await service.scopeFor(principalOf(tenant), key, request()));
    await claimed(await service.scopeFor({ ...mine, tenantId: other }, key, request()));
  });

  it('takes over a claim past its timeout; the old claim can then store nothing', async () => {
    const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
    const stale = await claimed(scope);
    clock.advance(CLAIM_TIMEOUT_MS - 1);
    expect(await service.claim(scope)).toEqual({ kind: 'in-flight' });
    clock.advance(1);
    const fresh = await claimed(scope);
    expect(fresh).not.toBe(stale);
    expect(await service.complete(scope, stale, ok('late'))).toBe(false);
    expect(await service.complete(scope, fresh, ok('on time'))).toBe(true);
    expect(await service.claim(scope)).toEqual({ kind: 'replay', response: ok('on time') });
  });

  it('starts afresh on a record past its lifetime', async () => {
    const scope = await service.scopeFor(principalOf(other), freshKey(), request());
    await service.complete(scope, await claimed(scope), ok('yesterday'));
    clock.advance(RECORD_LIFETIME_MS);
    expect((await service.claim(scope)).kind).toBe('claimed');
  });
});

describe('the retention policy', () => {
  it('is registered every 10 minutes, and deletes the records past their lifetime, of every tenant', async () => {
    expect(purge).toMatchObject({ name: 'idempotency-records', periodMs: 600_000 });
    clock.advance(-RECORD_LIFETIME_MS);
    const old = [];
    for (const tenantId of [tenant, other]) {
      const scope = await service.scopeFor(principalOf(tenantId), freshKey(), request());
      await service.complete(scope, await claimed(scope), ok('old'));
      old.push(scope);
    }
    clock.reset();
    const current = await service.scopeFor(principalOf(tenant), freshKey(), request());
    await service.complete(current, await claimed(current), ok('current'));
    const expiredBefore = await db.rows('SELECT 1 FROM idempotency_records WHERE expires_at <= $1', [
      clock.now(),
    ]);
    const deleted = await db.work.transaction({}, (change) => purge.purge(change, clock.now()));
    expect(deleted).toBe(expiredBefore.length);
    expect(deleted).toBeGreaterThanOrEqual(2);
    expect(await db.rows('SELECT 1 FROM idempotency_records WHERE expires_at <= $1', [clock.now()])).toEqual(
      [],
    );
    expect(await service.claim(current)).toEqual({ kind: 'replay', response: ok('current') });
    for (const scope of old) expect((await service.claim(scope)).kind).toBe('claimed');
  });
});

describe('release', () => {
  it('gives the key back: the next request with it is processed as new', async () => {
    const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
    await service.release(scope, await claimed(scope));
    expect((await service.claim(scope)).kind).toBe('claimed');
  });

  it('keeps a completed record (its change committed): the retry replays it', async () => {
    const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
    const claimId = await claimed(scope);
    await service.complete(scope, claimId, ok('done'));
    await service.release(scope, claimId);
    expect(await service.claim(scope)).toEqual({ kind: 'replay', response: ok('done') });
  });

  it('keeps the resource a failed request pinned: the retry resumes it at once', async () => {
    const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
    const claimId = await claimed(scope);
    const resource = randomUUID();
    const pinned = await db.work.transaction({}, (change) => service.pin(change, scope, claimId, resource));
    expect(pinned).toBe(true);
    await service.release(scope, claimId);
    // Another request with the key cannot take the pinned resource over.
    const another = { ...scope, requestDigest: Buffer.alloc(32, 1) };
    expect((await service.claim(another)).kind).toBe('mismatch');
    expect(await service.claim(scope)).toMatchObject({ kind: 'claimed', resumed: resource });
  });

  it('releases only its own claim, never one a retry took over', async () => {
    const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
    const stale = await claimed(scope);
    clock.advance(CLAIM_TIMEOUT_MS);
    await claimed(scope);
    await service.release(scope, stale);
    expect(await service.claim(scope)).toEqual({ kind: 'in-flight' });
  });

  describe('while the database is away (a restart, a failover)', () => {
    /** The next `count` releases fail as a connection cut by a failover does. */
    const cutReleases = (count: number) => {
      const release = jest.spyOn(IdempotencyRepository.prototype, 'release');
      for (let i = 0; i < count; i++)
        release.mockRejectedValueOnce(
          Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
        );
      return release;
    };
    /** A release the database could not take; its timer stopped, so that the test runs each round itself. */
    const releaseWhileAway = async (scope: IdempotencyScope, claimId: string) => {
      await service.release(scope, claimId);
      service.onApplicationShutdown();
    };
    /**
     * What a kept release or response goes through: the key in flight meanwhile, a round while the
     * database is still away (kept), then one once it answers (landed).
     */
    const landsOnceBack = async (scope: IdempotencyScope) => {
      expect(service.releasesPending).toBe(1);
      expect(await service.claim(scope)).toEqual({ kind: 'in-flight' });
      await service.retryReleases(); // still away
      expect(service.releasesPending).toBe(1);
      await service.retryReleases(); // back
      expect(service.releasesPending).toBe(0);
    };
    afterEach(() => jest.restoreAllMocks());

    it('keeps the release and lands it once the database answers: the retry is processed as new', async () => {
      const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
      const claimId = await claimed(scope);
      cutReleases(2);
      await releaseWhileAway(scope, claimId);
      await landsOnceBack(scope);
      expect((await service.claim(scope)).kind).toBe('claimed');
    });

    it('gives up once the claim timed out (anyone may take it over), and rethrows other errors', async () => {
      const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
      const claimId = await claimed(scope);
      cutReleases(1);
      await releaseWhileAway(scope, claimId);
      clock.advance(CLAIM_TIMEOUT_MS);
      await service.retryReleases();
      expect(service.releasesPending).toBe(0);

      jest
        .spyOn(IdempotencyRepository.prototype, 'release')
        .mockRejectedValueOnce(new Error('syntax error at or near "DELETE"'));
      await expect(service.release(scope, claimId)).rejects.toThrow('syntax error');
      expect(service.releasesPending).toBe(0);
    });

    it('releases a claim whose answer was lost with its connection (it committed): a retry is served', async () => {
      const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
      // The claim commits, then the connection is cut before its answer arrives.
      const real = new IdempotencyRepository(db.dataSource);
      jest.spyOn(IdempotencyRepository.prototype, 'claim').mockImplementationOnce(async (c) => {
        await real.claim(c);
        throw Object.assign(new Error('server conn crashed?'), { code: '08P01' });
      });
      await expect(service.claim(scope)).rejects.toThrow('server conn crashed?');
      service.onApplicationShutdown();
      expect(await service.claim(scope)).toEqual({ kind: 'in-flight' });
      await service.retryReleases();
      expect((await service.claim(scope)).kind).toBe('claimed');
    });

    it("stores a handler's response the database could not take once it is back: the retry replays it", async () => {
      const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
      const claimId = await claimed(scope);
      jest
        .spyOn(IdempotencyRepository.prototype, 'complete')
        .mockRejectedValueOnce(Object.assign(new Error('server conn crashed?'), { code: '08P01' }))
        .mockRejectedValueOnce(Object.assign(new Error('Connection terminated unexpectedly'), {}));
      await expect(service.complete(scope, claimId, ok('captured'))).rejects.toThrow('server conn crashed?');
      service.onApplicationShutdown();
      await landsOnceBack(scope);
      expect(await service.claim(scope)).toEqual({ kind: 'replay', response: ok('captured') });
    });

    it('never releases a completed record: a commit whose answer was lost is replayed', async () => {
      const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
      const claimId = await claimed(scope);
      await service.complete(scope, claimId, ok('committed'));
      cutReleases(1);
      await releaseWhileAway(scope, claimId);
      await service.retryReleases();
      expect(await service.claim(scope)).toEqual({ kind: 'replay', response: ok('committed') });
    });
  });
});

describe('completeWithChange', () => {
  const renamed = (name: string) =>
    db.rows('SELECT 1 FROM tenants WHERE id = $1 AND name = $2', [tenant, name]).then((r) => r.length === 1);

  it('stores the response with the change it answers: both commit', async () => {
    const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
    const claimId = await claimed(scope);
    await db.work.transaction({}, async (change) => {
      await change.query('UPDATE tenants SET name = $2 WHERE id = $1', [tenant, 'committed']);
      await service.completeWithChange(change, scope, claimId, ok('answer'), () => new Error('taken over'));
    });
    expect(await renamed('committed')).toBe(true);
    expect(await service.claim(scope)).toEqual({ kind: 'replay', response: ok('answer') });
  });

  it('fails the whole change when a retry took the claim over: nothing of it is written', async () => {
    const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
    const stale = await claimed(scope);
    clock.advance(CLAIM_TIMEOUT_MS);
    await claimed(scope);
    const change = db.work.transaction({}, async (c) => {
      await c.query('UPDATE tenants SET name = $2 WHERE id = $1', [tenant, 'half-written']);
      await service.completeWithChange(c, scope, stale, ok('stale'), () => new Error('taken over'));
    });
    await expect(change).rejects.toThrow('taken over');
    expect(await renamed('half-written')).toBe(false);
    expect(await service.claim(scope)).toEqual({ kind: 'in-flight' });
  });

  it('stores nothing when the change fails after it', async () => {
    const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
    const claimId = await claimed(scope);
    const change = db.work.transaction({}, async (c) => {
      await service.completeWithChange(c, scope, claimId, ok('never'), () => new Error('taken over'));
      throw new Error('the handler failed after');
    });
    await expect(change).rejects.toThrow('the handler failed after');
    expect(await service.claim(scope)).toEqual({ kind: 'in-flight' });
  });
});

describe('pin', () => {
  it('is false once a retry took the claim over, and pins nothing', async () => {
    const scope = await service.scopeFor(principalOf(tenant), freshKey(), request());
    const stale = await claimed(scope);
    clock.advance(CLAIM_TIMEOUT_MS);
    await claimed(scope);
    const resource = randomUUID();
    expect(await db.work.transaction({}, (change) => service.pin(change, scope, stale, resource))).toBe(
      false,
    );
    expect((await recordsOf(tenant)).some((r) => r.resource_id === resource)).toBe(false);
  });
});

it('keeps no key or body in clear in its rows', async () => {
  const scope = await service.scopeFor(
    principalOf(tenant),
    'my-very-own-key',
    request({ number: '4242424242424242' }),
  );
  await service.complete(scope, await claimed(scope), ok('{"number":"4242424242424242"}'));
  const rows = JSON.stringify(await db.rows('SELECT * FROM idempotency_records'));
  expect(rows).not.toContain('my-very-own-key');
  expect(rows).not.toContain('4242424242424242');
});
