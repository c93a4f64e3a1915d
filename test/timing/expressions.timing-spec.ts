import { expectProblem, TestApp } from '../support/app';
import fc from 'fast-check';
import { measureLoop, tokenize, scene } from '../support/attacker';
import { fuzzedExpression } from '../support/fuzzed-expressions';
import { LoadBound } from '../support/contention';

/**
 * Abuse class: expressions, the cases that measure the event loop and the heap while hostile expressions
 * are evaluated (the others: test/abuse/expressions.e2e-spec.ts). They measure wall-clock time: they run
 * in the timing project, and their time bounds (100 ms, 1 s, for a quiet machine) stretch with the
 * contention measured around each case (test/support/contention.ts), up to 4 times.
 */
describe('abuse: expressions hold the event loop briefly', () => {
  let t: TestApp;
  let pub: string;

  beforeAll(async () => {
    const s = await scene('expression-timing', {
      pub: { type: 'public', permissions: ['token:create', 'token:update'] },
    });
    t = s.t;
    ({ pub } = s.keys);
  });
  afterAll(() => t.close());

  it('the amplification expression (capture doubling in a for, then replace) is refused at once: the loop keeps turning, the heap stays small', async () => {
    const bomb =
      '{% capture s %}xx{% endcapture %}{% for i in (1..26) %}{% capture s %}{{ s }}{{ s }}{% endcapture %}{% endfor %}' +
      "{{ s | replace: 'x', 'yyyyyyyy' }}";
    const bound = new LoadBound();
    bound.sample();
    const measured = await measureLoop(() =>
      tokenize(t, pub, { type: 'token', data: 'a', search_indexes: [bomb] }),
    );
    bound.sample();
    process.stdout.write(
      `amplification: ${measured.result.status} in ${measured.elapsedMs.toFixed(1)} ms, loop held ${measured.maxBlockMs.toFixed(1)} ms, heap +${measured.heapGrowthMb.toFixed(1)} MB, ${bound.describe()}\n`,
    );
    expectProblem(measured.result, 400);
    expect(measured.maxBlockMs).toBeLessThan(bound.ms(100));
    expect(measured.heapGrowthMb).toBeLessThan(100);
  });

  it('a tokenize of 100 hostile expressions never holds the event loop for 100 ms', async () => {
    const hostile = [
      '{{ data | split: "" | sort | reverse | join: "," | split: "," | uniq | join: "" }}',
      "{{ data | replace: 'a', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' }}",
      '{{ data | strip_html | escape | url_encode | base64_encode | sha256 }}',
      '{{ (1..100000000) | join }}',
      '{{ data | split: "a" | join: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" | size }}',
    ];
    const data = 'a<'.repeat(2000);
    const body = Array.from({ length: 100 }, (_, i) => ({
      type: 'token',
      data,
      search_indexes: [hostile[i % hostile.length]],
    }));
    const bound = new LoadBound();
    bound.sample();
    const measured = await measureLoop(() => tokenize(t, pub, body));
    bound.sample();
    process.stdout.write(
      `100 hostile expressions: ${measured.result.status} in ${measured.elapsedMs.toFixed(1)} ms, loop held ${measured.maxBlockMs.toFixed(1)} ms, heap +${measured.heapGrowthMb.toFixed(1)} MB, ${bound.describe()}\n`,
    );
    expect(measured.result.status).toBe(400);
    expect(measured.maxBlockMs).toBeLessThan(bound.ms(100));
  });

  it('random expressions (the fuzz generator) never hold the event loop for 100 ms, nor a request for 1 s', async () => {
    // The generator of test/fuzz.e2e-spec.ts, on a seed of its own; each case is measured around its
    // request alone. Each is bounded by the evaluator: 250 ms of worker time, plus the hard time-out's grace.
    const CARD = { number: '4000056655665556', expiration_month: 12, expiration_year: 2031, cvc: '123' };
    const expressions = fc.sample(fuzzedExpression, { numRuns: 1000, seed: 20261126 });
    let held = { ms: 0, expression: '' };
    let slowest = { ms: 0, expression: '' };
    const statuses: Record<number, number> = {};
    const bound = new LoadBound();
    for (const [i, expression] of expressions.entries()) {
      if (i % 100 === 0) bound.sample();
      const element =
        i % 2 === 0
          ? { type: 'card', data: CARD, search_indexes: [expression] }
          : {
              type: 'token',
              data: { secret: 'x'.repeat(i % 500), number: CARD.number },
              fingerprint_expression: expression,
            };
      const measured = await measureLoop(() => tokenize(t, pub, element));
      statuses[measured.result.status] = (statuses[measured.result.status] ?? 0) + 1;
      expect(measured.result.status).toBeLessThan(500);
      if (measured.maxBlockMs > held.ms) held = { ms: measured.maxBlockMs, expression };
      if (measured.elapsedMs > slowest.ms) slowest = { ms: measured.elapsedMs, expression };
    }
    process.stdout.write(
      `1000 random expressions: statuses ${JSON.stringify(statuses)}, loop held at most ${held.ms.toFixed(1)} ms ` +
        `(${JSON.stringify(held.expression).slice(0, 100)}), slowest ${slowest.ms.toFixed(1)} ms (${JSON.stringify(slowest.expression).slice(0, 100)}), ` +
        `${bound.describe()}\n`,
    );
    bound.sample();
    expect(held.ms).toBeLessThan(bound.ms(100));
    expect(slowest.ms).toBeLessThan(bound.ms(1_000));
  });
});
