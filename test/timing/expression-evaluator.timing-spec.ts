import { monitorEventLoopDelay } from 'node:perf_hooks';
import { ExpressionError } from '../../src/modules/tokens/expressions/expression-engine';
import { LoadBound } from '../support/contention';
import {
  DEFAULT_LIMITS,
  ExpressionEvaluator,
  ExpressionOutcome,
} from '../../src/modules/tokens/expressions/expression-evaluator';

/**
 * The evaluator's worker threads, their time budgets and hard time-outs, and the event loop's delay while
 * they run: real threads and the real clock (from a few milliseconds to seconds), so here with the load-
 * and wall-clock-sensitive tests rather than in the quick tier. The expressions themselves:
 * src/modules/tokens/expressions/expression-engine.spec.ts.
 */

const TENANT = 'tenant-a';

const reasonOf = (outcome: ExpressionOutcome): string | undefined =>
  outcome instanceof ExpressionError ? outcome.reason : undefined;

describe('ExpressionEvaluator (worker threads)', () => {
  let evaluator: ExpressionEvaluator;

  beforeAll(() => {
    evaluator = new ExpressionEvaluator({ ...DEFAULT_LIMITS, workers: 2 });
  });
  afterAll(() => evaluator.onModuleDestroy());

  it('evaluates in a worker and keeps each batch in its place', async () => {
    const outcomes = await evaluator.evaluate(
      [
        {
          data: { number: '4242424242424242' },
          templates: ['{{ data.number }}', '{{ data.number | last4 }}'],
        },
        { data: 'abc', templates: ['{{ data | upcase }}', '{{ data.nope }}', '{{ data | size }}'] },
      ],
      TENANT,
    );
    expect(outcomes[0]).toEqual(['4242424242424242', '4242']);
    expect(outcomes[1][0]).toBe('ABC');
    expect(reasonOf(outcomes[1][1])).toBe('unknown_variable');
    expect(outcomes[1][2]).toBe('3');
  });

  it('answers the default expressions without a worker', async () => {
    const fresh = new ExpressionEvaluator({ ...DEFAULT_LIMITS, workers: 0 });
    const outcomes = await fresh.evaluate(
      [
        { data: { number: '4242424242424242' }, templates: ['{{ data.number }}'] },
        { data: { a: 1 }, templates: ['{{ data | stringify }}'] },
      ],
      TENANT,
    );
    expect(outcomes).toEqual([['4242424242424242'], ['{"a":1}']]);
    await fresh.onModuleDestroy();
  });

  it('stops a request past its budget, at the expression that overran, and skips the rest', async () => {
    const tight = new ExpressionEvaluator({ ...DEFAULT_LIMITS, budgetMs: 5, workers: 1 });
    const slow = '{{ data | split: "" | sort | reverse | join: "" | split: "" | sort | join: "" | size }}';
    const batches = Array.from({ length: 400 }, () => ({ data: 'z'.repeat(1300), templates: [slow] }));
    const outcomes = (await tight.evaluate(batches, TENANT)).map((o) => o[0]);
    const stoppedAt = outcomes.findIndex((o) => reasonOf(o) === 'too_slow');
    expect(stoppedAt).toBeGreaterThanOrEqual(0);
    expect(outcomes.slice(0, stoppedAt).every((o) => o === '1300')).toBe(true);
    expect(outcomes.slice(stoppedAt + 1).every((o) => o === undefined)).toBe(true);
    await tight.onModuleDestroy();
  });

  it('terminates a worker that does not answer in time, refuses that expression, and carries on with a new worker', async () => {
    // The hard time-out (5 ms) fires while the worker is inside one long filter call, before its own
    // clock (checked between filters) could stop it.
    const limits = { ...DEFAULT_LIMITS, budgetMs: 1000, graceMs: -995, workers: 1 };
    const hard = new ExpressionEvaluator(limits);
    const pool = hard as unknown as { all: Set<unknown> };
    const [[outcome]] = await hard.evaluate(
      [{ data: 'x'.repeat(2_000_000), templates: ['{{ data | split: "" | size }}'] }],
      TENANT,
    );
    expect(reasonOf(outcome)).toBe('too_slow');
    expect(pool.all.size).toBe(0);
    // The next request gets a new worker (with ordinary limits, so that a slow machine cannot fail it).
    limits.graceMs = DEFAULT_LIMITS.graceMs;
    expect(await hard.evaluate([{ data: 'x', templates: ['{{ data | upcase }}'] }], TENANT)).toEqual([['X']]);
    expect(pool.all.size).toBe(1);
    await hard.onModuleDestroy();
  });

  it('refuses an expression that takes a worker past its heap limit, and replaces the worker', async () => {
    const small = new ExpressionEvaluator({ ...DEFAULT_LIMITS, maxHeapMb: 48, workers: 1 });
    const [[outcome]] = await small.evaluate(
      [{ data: 'x'.repeat(4_000_000), templates: ['{{ data | split: "" | size }}'] }],
      TENANT,
    );
    expect(reasonOf(outcome)).toBe('memory');
    expect(await small.evaluate([{ data: 'x', templates: ['{{ data | upcase }}'] }], TENANT)).toEqual([
      ['X'],
    ]);
    await small.onModuleDestroy();
  });

  it('keeps the event loop free while 100 hostile expressions run', async () => {
    const hostile = [
      '{{ data | split: "" | sort | reverse | join: "," | split: "," | uniq | join: "" }}',
      "{{ data | replace: 'a', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' }}",
      '{{ data | strip_html | escape | url_encode | base64_encode | sha256 }}',
      '{{ (1..100000000) | join }}',
    ];
    const batches = Array.from({ length: 100 }, (_, i) => ({
      data: 'a<'.repeat(2000),
      templates: [hostile[i % hostile.length]],
    }));
    const bound = new LoadBound();
    bound.sample();
    const histogram = monitorEventLoopDelay({ resolution: 5 });
    histogram.enable();
    const outcomes = await evaluator.evaluate(batches, TENANT);
    histogram.disable();
    bound.sample();
    expect(outcomes.flat().some((o) => o instanceof ExpressionError)).toBe(true);
    // 100 ms on a quiet machine, stretched by the contention measured before and after.
    expect(histogram.max / 1e6).toBeLessThan(bound.ms(100));
  });
});
