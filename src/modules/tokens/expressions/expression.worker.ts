import { parentPort, workerData } from 'node:worker_threads';
import { EXPRESSION_TIME_LIMIT_MS, ExpressionEngine, ExpressionError } from './expression-engine';
import type { EvaluationJob, EvaluationResult } from './expression-evaluator';

/**
 * The expression worker: renders the templates of one job after the other. It writes the index of the
 * template it is on into shared memory, so that the main thread, which terminates it when a job overruns,
 * knows which expression was to blame without asking.
 */
const engine = new ExpressionEngine();
const progress = new Int32Array((workerData as { progress: SharedArrayBuffer }).progress);

parentPort!.on('message', (job: EvaluationJob) => {
  const started = performance.now();
  const results: EvaluationResult[] = [];
  let stopped = false;
  job.items.forEach((item, i) => {
    if (stopped) return results.push({ skipped: true });
    Atomics.store(progress, 0, i);
    const now = performance.now();
    const deadline = Math.min(now + EXPRESSION_TIME_LIMIT_MS, started + job.budgetMs);
    try {
      results.push({ value: engine.render(item.template, job.data[item.data], deadline) });
    } catch (error) {
      const reason = error instanceof ExpressionError ? error.reason : 'invalid';
      results.push({ error: reason });
      // A request over its budget stops here: the rest would only spend more of it.
      if (reason === 'too_slow' || reason === 'memory') stopped = true;
    }
  });
  parentPort!.postMessage({ id: job.id, results });
});
// The first render in a fresh thread pays for liquidjs's lazy set-up and the first compilation of its
// parse and render paths: a few milliseconds alone, but past the 50 ms an expression may take when the
// machine is loaded (a cold worker's first `{{ data.number | last4 }}` was refused as too slow under
// load, the same template taking 0.1 ms warm). Paid here, before the worker says it is ready, not out of
// the budget of the request that meets the worker first.
try {
  engine.render(
    '{{ data.number | card_bin }}{{ data | json_stringify | last4 }}',
    { number: '4242424242424242' },
    Infinity,
  );
} catch {
  // A warm-up that fails costs nothing more: the requests' own renders report their errors.
}
parentPort!.postMessage({ ready: true });
