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
parentPort!.postMessage({ ready: true });
