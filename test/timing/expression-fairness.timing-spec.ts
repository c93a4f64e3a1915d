import { newApplication, newTenant, startApp, TestApp } from '../support/app';
import { tokenize } from '../support/attacker';
import { ignoreTimeout, waitFor } from '../support/wait';
import { ExpressionEvaluator } from '../../src/modules/tokens/expressions/expression-evaluator';
import { LoadBound } from '../support/contention';

/**
 * About 10 ms of worker time each (8 sorts of a 2,000-character string it makes itself), far from the
 * 50 ms one expression may take, in few bytes: the attack costs the event loop little.
 */
const SLOW = `{{ (1..700) | join: ""${' | split: "" | sort | reverse | join: ""'.repeat(8)} | size }}`;

/** 40 such expressions: more than one request's worker budget (250 ms), so each request spends all of it. */
const attackBody = Array.from({ length: 10 }, () => ({
  type: 'token',
  data: 'x',
  search_indexes: [SLOW, SLOW, SLOW, SLOW],
}));

/**
 * Abuse class: starving other tenants' expressions. Expressions other than the default shapes run in a
 * small pool of worker threads; one tenant sending 20 concurrent requests that each spend their whole
 * time budget there must not make another tenant's tokenize with a custom expression wait for all of
 * them: each tenant's evaluations queue behind its own.
 */
describe('abuse: one tenant cannot starve another tenant of expression workers', () => {
  let t: TestApp;
  let attacker: string;
  let victim: string;

  beforeAll(async () => {
    t = await startApp({ RATE_LIMIT_PER_MINUTE: '100000' });
    const a = await newTenant(t, 'noisy');
    const b = await newTenant(t, 'quiet');
    attacker = (await newApplication(t, a.managementKey, { type: 'private', permissions: ['token:create'] }))
      .key;
    victim = (await newApplication(t, b.managementKey, { type: 'private', permissions: ['token:create'] }))
      .key;
  });
  afterAll(() => t.close());

  const victimTokenize = async (): Promise<{ status: number; ms: number }> => {
    const started = performance.now();
    const res = await tokenize(t, victim, {
      type: 'token',
      data: 'hello world',
      search_indexes: ['{{ data | split: " " | reverse | join: "-" }}'],
    });
    return { status: res.status, ms: performance.now() - started };
  };

  it("another tenant's tokenize with a custom expression answers within 500 ms while one tenant keeps every worker busy", async () => {
    // Workers start on demand (about a second under ts-node): start them before measuring.
    await Promise.all([tokenize(t, attacker, attackBody), tokenize(t, attacker, attackBody)]);
    const alone = await victimTokenize();
    expect(alone.status).toBe(201);
    // The 500 ms is for a quiet machine; it stretches with the contention measured before and after.
    const bound = new LoadBound();
    bound.sample();

    // The attacker keeps 20 requests in flight (each answered one replaced at once) until the end.
    let attacking = true;
    const statuses = new Set<number>();
    let attackRequests = 0;
    const attacker20 = Array.from({ length: 20 }, async () => {
      while (attacking) {
        attackRequests++;
        statuses.add((await tokenize(t, attacker, attackBody)).status);
      }
    });
    const evaluator = t.app.get(ExpressionEvaluator);
    const during: { status: number; ms: number; queued: number }[] = [];
    try {
      for (let i = 0; i < 5; i++) {
        // Measure while the attack holds every worker and more of its requests wait for one.
        await waitFor(() => evaluator.queued >= 3, {
          intervalMs: 10,
          what: "the attacker's requests queued",
        }).catch(ignoreTimeout);
        const queued = evaluator.queued;
        during.push({ ...(await victimTokenize()), queued });
      }
    } finally {
      attacking = false;
      await Promise.all(attacker20);
    }
    bound.sample();
    const times = during.map((d) => d.ms).sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)];
    process.stdout.write(
      `expression fairness: victim alone ${alone.ms.toFixed(0)} ms; during 20 concurrent slow requests ` +
        `${during.map((d) => `${d.ms.toFixed(0)} ms (${d.status}, ${d.queued} waiting)`).join(', ')}, ` +
        `median ${median.toFixed(0)} ms; ${attackRequests} attack requests, statuses ${[...statuses].join(',')}; ` +
        `${bound.describe()}\n`,
    );
    for (const d of during) {
      expect(d.queued).toBeGreaterThanOrEqual(3);
      expect(d.status).toBe(201);
    }
    expect(median).toBeLessThan(bound.ms(500));
  });
});
