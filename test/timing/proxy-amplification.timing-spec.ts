import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import request from 'supertest';
import { expectProblem, newApplication, newTenant, startApp, TestApp } from '../support/app';
import { tokenize } from '../support/attacker';
import { Destination } from '../support/destination';
import { waitFor } from '../support/wait';
import { LoadBound } from '../support/contention';

const KIB = 1024;
const MIB = 1024 * KIB;
/** The largest token data allowed: 64 KiB as JSON (a string of 64 KiB - 2 characters and its quotes). */
const LARGEST = 'a'.repeat(64 * KIB - 2);
/** A token element of this data; its fingerprint is a constant (the default one refuses outputs over 4 KiB). */
const large = (data: unknown) => ({ type: 'token', data, fingerprint_expression: 'fixed' });

/** What one request cost the server (it runs in this process): memory growth and how long others waited. */
interface Cost {
  status: number;
  elapsedMs: number;
  /** Growth of the process's resident memory at its peak, sampled from another thread every 2 ms. */
  rssGrowthMb: number;
  /** Growth of the JS heap plus off-heap buffers, sampled on the server's own (blockable) thread. */
  heapGrowthMb: number;
  /** The longest the event loop was held past its 5 ms tick. */
  maxBlockMs: number;
  /**
   * The slowest `GET /ping` another tenant sent while the request ran (its own database round trips
   * included, so it also shows the load of the machine).
   */
  otherTenantMaxMs: number;
  /**
   * How far the machine's contention, measured before and after, stretches a quiet machine's time
   * bounds (test/support/contention.ts): 1 to 4.
   */
  stretch: number;
}

/**
 * Samples the resident memory of this process from a worker thread, so that the peak of a synchronous
 * burst on the main thread (which runs the server) is seen too.
 */
async function rssSampler(): Promise<{ peak(): number; stop(): Promise<number> }> {
  const shared = new Float64Array(new SharedArrayBuffer(8));
  const worker = new Worker(
    `const { workerData } = require('node:worker_threads');
     const peak = new Float64Array(workerData);
     setInterval(() => { peak[0] = Math.max(peak[0], process.memoryUsage.rss()); }, 2);`,
    { eval: true, workerData: shared.buffer },
  );
  await waitFor(() => shared[0] !== 0, { intervalMs: 10, what: 'the first RSS sample' });
  return { peak: () => shared[0], stop: () => worker.terminate() };
}

/**
 * Abuse class: detokenization amplification. A short proxy request naming a large token many times
 * made the server build the whole detokenized body (twice: the rendered value, then its bytes) before
 * its 10 MiB check; with a 1,000,000-character token named 1,000 times that was about 1 GB, seconds of a
 * blocked event loop for every tenant, and a 500. Token data is now at most 64 KiB as JSON, and the proxy
 * computes the size of what it would build before building it: a body over 10 MiB, a header value over
 * 16 KiB or a query string over 8 KiB after detokenization is a 400 `request_too_large` with
 * `BT-PROXY-ERROR: true`, nothing built and nothing sent.
 */
describe('abuse: proxy detokenization amplification', () => {
  let t: TestApp;
  let dest: Destination;
  let attacker: string;
  let victim: string;
  let largest: string;

  beforeAll(async () => {
    dest = await new Destination().start();
    t = await startApp({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1', RATE_LIMIT_PER_MINUTE: '100000' });
    const attackers = await newTenant(t, 'amplifier');
    attacker = (
      await newApplication(t, attackers.managementKey, {
        type: 'private',
        permissions: ['token:create', 'token:use', 'token:update'],
      })
    ).key;
    const victims = await newTenant(t, 'bystander');
    victim = (await newApplication(t, victims.managementKey, { type: 'private', permissions: ['token:use'] }))
      .key;
    largest = (await tokenize(t, attacker, large(LARGEST)).expect(201)).body.id;
  });
  afterAll(async () => {
    await t.close();
    await dest.stop();
  });
  beforeEach(() => dest.reset());

  const proxy = (path = '/api') =>
    request(t.http).post(`/proxy${path}`).set('BT-API-KEY', attacker).set('BT-PROXY-URL', dest.url());

  /** Runs `hostile` while another tenant keeps calling `GET /ping`, and measures what it cost. */
  async function cost(hostile: () => Promise<request.Response>): Promise<Cost> {
    const ping = async () => {
      const started = performance.now();
      await request(t.http).get('/ping').set('BT-API-KEY', victim).expect(200);
      return performance.now() - started;
    };
    // Steady state: the code paths compiled and the bystander's key known, as on a running server.
    await hostile();
    await ping();
    const memory = () => {
      const m = process.memoryUsage();
      return { used: m.heapUsed + m.external, rss: m.rss };
    };
    const bound = new LoadBound();
    bound.sample();
    const rss = await rssSampler();
    const before = memory();
    const peak = { ...before };
    const sample = () => {
      peak.used = Math.max(peak.used, memory().used);
    };
    const sampler = setInterval(sample, 5);
    const loop = monitorEventLoopDelay({ resolution: 5 });
    loop.enable();
    const started = performance.now();
    let measured: Omit<Cost, 'stretch'>;
    try {
      let done = false;
      const attack = (async () => {
        try {
          return await hostile();
        } finally {
          done = true;
        }
      })();
      const latencies: number[] = [];
      do latencies.push(await ping());
      while (!done);
      const res = await attack;
      const elapsedMs = performance.now() - started;
      sample();
      measured = {
        status: res.status,
        elapsedMs: Math.round(elapsedMs),
        rssGrowthMb: Math.round((rss.peak() - before.rss) / MIB),
        heapGrowthMb: Math.round((peak.used - before.used) / MIB),
        maxBlockMs: Math.round(loop.max / 1e6),
        otherTenantMaxMs: Math.round(Math.max(...latencies)),
      };
    } finally {
      loop.disable();
      clearInterval(sampler);
      await rss.stop();
    }
    bound.sample();
    return { ...measured, stretch: Number(bound.ms(1).toFixed(2)) };
  }

  const refusedTooLarge = (res: request.Response, field: string) => {
    expectProblem(res, 400);
    expect(res.headers['bt-proxy-error']).toBe('true');
    expect(res.body.code).toBe('request_too_large');
    expect(Object.keys(res.body.errors)).toEqual([field]);
    // The problem names the field and the limit; never the data.
    expect(res.text).not.toContain('aaaaaaaa');
  };

  describe('token data is at most 64 KiB as JSON', () => {
    it('refuses the 1,000,000-character token of the reproduced attack, naming the field', async () => {
      const res = await tokenize(t, attacker, large('a'.repeat(1_000_000)));
      expectProblem(res, 400);
      expect(res.body.errors).toEqual({ data: [expect.stringContaining('64 KiB')] });
      expect(res.text).not.toContain('aaaaaaaa');
    });

    it('counts the serialized JSON in UTF-8 bytes: 64 KiB passes, one byte more does not', async () => {
      await tokenize(t, attacker, large(LARGEST)).expect(201);
      // 'é' is two bytes of UTF-8; '"' is two characters of JSON.
      for (const data of [
        `${LARGEST}b`,
        'é'.repeat(32 * KIB),
        '"'.repeat(32 * KIB),
        { nested: { list: [LARGEST] } },
      ]) {
        const res = await tokenize(t, attacker, large(data));
        expectProblem(res, 400);
        expect(Object.keys(res.body.errors)).toEqual(['data']);
      }
    });

    it('names the element in a batch, and refuses at POST /tokens and PATCH /tokens/{id} too', async () => {
      const batch = await tokenize(t, attacker, [
        'small',
        { type: 'token', data: 'fine' },
        { type: 'token', data: 'also fine' },
        large(`${LARGEST}b`),
      ]);
      expectProblem(batch, 400);
      expect(Object.keys(batch.body.errors)).toEqual(['[3].data']);
      const created = await request(t.http)
        .post('/tokens')
        .set('BT-API-KEY', attacker)
        .send(large(`${LARGEST}b`));
      expectProblem(created, 400);
      expect(Object.keys(created.body.errors)).toEqual(['data']);
      const patched = await request(t.http)
        .patch(`/tokens/${largest}`)
        .set('BT-API-KEY', attacker)
        .set('Content-Type', 'application/merge-patch+json')
        .send(JSON.stringify({ data: `${LARGEST}b` }));
      expectProblem(patched, 400);
      expect(Object.keys(patched.body.errors)).toEqual(['data']);
    });
  });

  describe('the proxy sizes what detokenization would produce before producing it', () => {
    it('the amplification request: the largest token named 1,000 times in a 45 KB JSON body', async () => {
      const body = JSON.stringify({ items: Array.from({ length: 1000 }, () => `{{ ${largest} }}`) });
      expect(body.length).toBeLessThan(50 * KIB);
      const measured = await cost(() => proxy().set('Content-Type', 'application/json').send(body));
      console.log('amplification, JSON body of 1,000 x 64 KiB:', measured);
      expect(measured.status).toBe(400);
      expect(dest.received).toEqual([]);
      expect(dest.connections).toBe(0);
      expect(measured.rssGrowthMb).toBeLessThan(64);
      expect(measured.heapGrowthMb).toBeLessThan(64);
      // Nothing else waited on the server: its event loop was never held 100 ms (before: 957 ms with
      // this token, 11 s with a 1,000,000-character one, during which every tenant's request waited).
      expect(measured.maxBlockMs).toBeLessThan(100 * measured.stretch);
      expect(measured.otherTenantMaxMs).toBeLessThan(500 * measured.stretch);
      refusedTooLarge(await proxy().set('Content-Type', 'application/json').send(body), 'body');
    });

    it('refuses a text body over 10 MiB, counting inserted values as UTF-8', async () => {
      const body = `card=${`{{ ${largest} }}&`.repeat(161)}`;
      const measured = await cost(() => proxy().set('Content-Type', 'text/plain').send(body));
      console.log('amplification, text body of 161 x 64 KiB:', measured);
      expect(measured.status).toBe(400);
      refusedTooLarge(await proxy().set('Content-Type', 'text/plain').send(body), 'body');
      expect(dest.received).toEqual([]);
    });

    it('counts JSON escaping: a value inserted into a longer JSON string is sized as it will be escaped', async () => {
      // 64 KiB as JSON, its JSON text twice that once escaped inside a string: 81 copies are over
      // 10 MiB although 81 x 64 KiB is not, 79 copies are under and go through.
      const escaping = (await tokenize(t, attacker, large({ s: '\\'.repeat(32 * KIB - 5) })).expect(201)).body
        .id as string;
      const body = (n: number) =>
        JSON.stringify({ notes: Array.from({ length: n }, () => `note: {{ ${escaping} }}`) });
      refusedTooLarge(await proxy().set('Content-Type', 'application/json').send(body(81)), 'body');
      expect(dest.received).toEqual([]);
      const passed = await proxy('/status/200').set('Content-Type', 'application/json').send(body(79));
      expect(passed.status).toBe(200);
      const [seen] = dest.received;
      expect(seen.body.length).toBeGreaterThan(10 * MIB - 300 * KIB);
      expect(seen.body.length).toBeLessThanOrEqual(10 * MIB);
    });

    it('refuses a header value over 16 KiB after detokenization, naming the header', async () => {
      const measured = await cost(() => proxy().set('X-Card', `{{ ${largest} }}`).send({}));
      console.log('header of 64 KiB:', measured);
      expect(measured.status).toBe(400);
      refusedTooLarge(await proxy().set('X-Card', `{{ ${largest} }}`).send({}), 'x-card');
      expect(dest.received).toEqual([]);
    });

    it('refuses a query string over 8 KiB after detokenization, counting URL-encoding', async () => {
      refusedTooLarge(await proxy(`/api?q={{ ${largest} }}`).send({}), 'query');
      // 1,500 characters of 'é' are 9,000 once URL-encoded (two bytes, each as %XX).
      const accented = (await tokenize(t, attacker, large('é'.repeat(1500))).expect(201)).body.id as string;
      const measured = await cost(() => proxy(`/api?q={{ ${accented} }}`).send({}));
      console.log('query of 1,500 x é:', measured);
      expect(measured.status).toBe(400);
      refusedTooLarge(await proxy(`/api?q={{ ${accented} }}`).send({}), 'query');
      expect(dest.received).toEqual([]);
      // Within the limits, the same token still goes through (1,300 x 6 = 7,800 characters).
      const fits = (await tokenize(t, attacker, large('é'.repeat(1300))).expect(201)).body.id as string;
      await proxy(`/api?q={{ ${fits} }}`).send({}).expect(200);
      expect(dest.received[0].url).toBe(`/api?q=${encodeURIComponent('é'.repeat(1300))}`);
    });
  });
});
