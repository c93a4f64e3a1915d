import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { availableParallelism } from 'node:os';
import { extname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { evaluateSimple, ExpressionEngine, ExpressionError, ExpressionFailure } from './expression-engine';
import { FairQueue } from './fair-queue';

/** One template to render over `data[data]` (data values are sent once per job, not once per template). */
export interface EvaluationItem {
  template: string;
  data: number;
}

export interface EvaluationJob {
  id: number;
  items: EvaluationItem[];
  data: unknown[];
  /** The job's total time in the worker; past it, the rest of the job is skipped. */
  budgetMs: number;
}

export type EvaluationResult = { value: string } | { error: ExpressionFailure } | { skipped: true };

/** The expressions of one token, over its data. */
export interface ExpressionBatch {
  data: unknown;
  templates: string[];
}

/** Per template: its output, the reason it was refused, or undefined when it was not reached. */
export type ExpressionOutcome = string | ExpressionError | undefined;

export interface EvaluatorLimits {
  /** Worker time one request may spend on its expressions in all. */
  budgetMs: number;
  /** How long past the budget the main thread waits before it terminates a worker that does not answer. */
  graceMs: number;
  /** Heap of a worker; past it the worker dies and its expression is refused (memory). */
  maxHeapMb: number;
  /** Worker threads in the pool (EXPRESSION_WORKERS). */
  workers: number;
  /** Start a worker when the application starts, so that no request waits for one (about 100 ms). */
  warm: boolean;
}

// Under ts-node or ts-jest this module is TypeScript, and so is its worker: the worker registers ts-node.
const SCRIPT_EXTENSION = extname(__filename);

/**
 * At least 2, so that one request that spends its whole budget never holds every worker; at most 4, and
 * fewer than the cores when there are more than 3, so that the event loop keeps a core of its own.
 */
export const DEFAULT_WORKERS = Math.max(2, Math.min(4, availableParallelism() - 1));

export const DEFAULT_LIMITS: EvaluatorLimits = {
  budgetMs: 250,
  graceMs: 250,
  maxHeapMb: 96,
  workers: DEFAULT_WORKERS,
  // Compiled, a worker starts in about 100 ms; under ts-node (tests) in about a second, so only on demand.
  warm: SCRIPT_EXTENSION === '.js',
};

const WORKER_SCRIPT = join(__dirname, `expression.worker${SCRIPT_EXTENSION}`);
const WORKER_EXEC_ARGV =
  SCRIPT_EXTENSION === '.ts' ? ['--require', require.resolve('ts-node/register/transpile-only')] : [];

class WorkerDied extends Error {}

/** A request waiting for a worker. */
interface Waiter {
  resolve: (worker: ExpressionWorker) => void;
  reject: (error: Error) => void;
}

/** One worker thread, running one job at a time. */
class ExpressionWorker {
  private readonly worker: Worker;
  private readonly progress = new Int32Array(new SharedArrayBuffer(4));
  readonly ready: Promise<void>;
  private pending:
    | {
        job: EvaluationJob;
        resolve: (results: EvaluationResult[]) => void;
        reject: (error: Error) => void;
        timer: NodeJS.Timeout;
      }
    | undefined;
  dead = false;

  constructor(
    private readonly limits: EvaluatorLimits,
    private readonly onDeath: (worker: ExpressionWorker) => void,
  ) {
    this.worker = new Worker(WORKER_SCRIPT, {
      execArgv: WORKER_EXEC_ARGV,
      workerData: { progress: this.progress.buffer },
      resourceLimits: {
        maxOldGenerationSizeMb: limits.maxHeapMb,
        maxYoungGenerationSizeMb: 16,
        stackSizeMb: 4,
      },
    });
    this.worker.unref();
    this.ready = new Promise((resolve, reject) => {
      this.worker.once('message', () => resolve());
      this.worker.once('error', reject);
      this.worker.once('exit', () => reject(new WorkerDied('the expression worker exited while starting')));
    });
    this.ready.then(
      () => {
        this.worker.on('message', (message: { id: number; results: EvaluationResult[] }) =>
          this.settle(message),
        );
        this.worker.on('error', (error: Error & { code?: string }) =>
          this.die(error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'memory' : error),
        );
        this.worker.on('exit', () => this.die(new WorkerDied('the expression worker exited')));
      },
      () => this.die(new WorkerDied('the expression worker could not start')),
    );
  }

  run(job: EvaluationJob): Promise<EvaluationResult[]> {
    return new Promise((resolve, reject) => {
      Atomics.store(this.progress, 0, 0);
      const timer = setTimeout(() => this.die('too_slow'), job.budgetMs + this.limits.graceMs);
      this.pending = { job, resolve, reject, timer };
      this.worker.postMessage(job);
    });
  }

  private settle(message: { id: number; results: EvaluationResult[] }): void {
    const pending = this.pending;
    if (!pending || pending.job.id !== message.id) return;
    clearTimeout(pending.timer);
    this.pending = undefined;
    pending.resolve(message.results);
  }

  /**
   * Ends this worker. A job it was running is answered: the expression it was on is refused for
   * `reason` (time or memory, which a request caused), or the job fails with the error (a fault of
   * the service, not of the request).
   */
  die(reason: ExpressionFailure | Error): void {
    if (this.dead) return;
    this.dead = true;
    this.onDeath(this);
    void this.worker.terminate();
    const pending = this.pending;
    this.pending = undefined;
    if (!pending) return;
    clearTimeout(pending.timer);
    if (reason instanceof Error) return pending.reject(reason);
    const at = Atomics.load(this.progress, 0);
    pending.resolve(pending.job.items.map((_, i) => (i === at ? { error: reason } : { skipped: true })));
  }

  terminate(): Promise<number> {
    this.dead = true;
    return this.worker.terminate();
  }
}

/**
 * Evaluates fingerprint and search-index expressions without ever running Liquid
 * on the event loop: the default expressions and others of their shape are answered here directly
 * (`evaluateSimple`), every other one in a pool of worker threads with a time budget per request, a
 * hard time-out that terminates a worker that overruns, and a heap limit per worker. Validation
 * (parsing) is bounded by the template length and stays here. Requests waiting for a worker queue per
 * tenant (`FairQueue`): a tenant that keeps every worker busy delays its own requests, not another's.
 */
@Injectable()
export class ExpressionEvaluator implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Expressions');
  private readonly engine = new ExpressionEngine();
  private readonly idle: ExpressionWorker[] = [];
  private readonly all = new Set<ExpressionWorker>();
  private readonly waiting = new FairQueue<Waiter>();
  private nextId = 1;
  private closed = false;

  constructor(private readonly limits: EvaluatorLimits = DEFAULT_LIMITS) {}

  onApplicationBootstrap(): void {
    if (this.limits.warm)
      for (let i = 0; i < this.limits.workers; i++)
        void this.spawn().then(
          (worker) => this.release(worker),
          (error: unknown) => this.logger.error(`the expression worker did not start: ${String(error)}`),
        );
  }

  /** Requests waiting for a worker now. */
  get queued(): number {
    return this.waiting.size;
  }

  /** Throws ExpressionError when `template` is not an allowed expression. */
  validate(template: string): void {
    this.engine.parse(template);
  }

  /** Evaluates the batches of one request of `tenant` (whose requests queue behind its own only). */
  async evaluate(batches: ExpressionBatch[], tenant: string): Promise<ExpressionOutcome[][]> {
    const outcomes: ExpressionOutcome[][] = batches.map(
      (batch) => new Array<ExpressionOutcome>(batch.templates.length),
    );
    const items: EvaluationItem[] = [];
    const places: [number, number][] = [];
    const data: unknown[] = [];
    batches.forEach((batch, b) => {
      let dataIndex = -1;
      batch.templates.forEach((template, i) => {
        try {
          const simple = evaluateSimple(template, batch.data);
          if (simple !== undefined) return void (outcomes[b][i] = simple);
        } catch (error) {
          return void (outcomes[b][i] = error as ExpressionError);
        }
        if (dataIndex < 0) dataIndex = data.push(batch.data) - 1;
        items.push({ template, data: dataIndex });
        places.push([b, i]);
      });
    });
    if (!items.length) return outcomes;
    const results = await this.run(
      { id: this.nextId++, items, data, budgetMs: this.limits.budgetMs },
      tenant,
    );
    results.forEach((result, k) => {
      const [b, i] = places[k];
      outcomes[b][i] =
        'value' in result ? result.value : 'error' in result ? new ExpressionError(result.error) : undefined;
    });
    return outcomes;
  }

  private async run(job: EvaluationJob, tenant: string): Promise<EvaluationResult[]> {
    const worker = await this.acquire(tenant);
    try {
      return await worker.run(job);
    } finally {
      this.waiting.done(tenant);
      this.release(worker);
    }
  }

  /** A worker for a job of `tenant`, counted as serving it (until `waiting.done`). */
  private async acquire(tenant: string): Promise<ExpressionWorker> {
    if (this.closed) throw new Error('the expression evaluator is closed');
    const idle = this.idle.pop();
    if (idle) {
      this.waiting.started(tenant);
      return idle;
    }
    if (this.all.size < this.limits.workers) {
      this.waiting.started(tenant);
      try {
        return await this.spawn();
      } catch (error) {
        this.waiting.done(tenant);
        throw error;
      }
    }
    return new Promise((resolve, reject) =>
      this.waiting.push(tenant, {
        resolve,
        reject: (error) => {
          this.waiting.done(tenant);
          reject(error);
        },
      }),
    );
  }

  private async spawn(): Promise<ExpressionWorker> {
    const worker = new ExpressionWorker(this.limits, (dead) => this.forget(dead));
    this.all.add(worker);
    await worker.ready;
    return worker;
  }

  /** A free worker goes to the request whose tenant is served least now (FairQueue), else waits idle. */
  private release(worker: ExpressionWorker): void {
    if (worker.dead) return;
    const next = this.waiting.take();
    if (next) next.resolve(worker);
    else this.idle.push(worker);
  }

  /** A dead worker leaves the pool; a request waiting for one gets a new worker. */
  private forget(worker: ExpressionWorker): void {
    this.all.delete(worker);
    const index = this.idle.indexOf(worker);
    if (index >= 0) this.idle.splice(index, 1);
    this.logger.warn('an expression worker was terminated (time or memory limit) and is replaced');
    if (this.closed) return;
    const next = this.waiting.take();
    if (next) void this.spawn().then(next.resolve, next.reject);
  }

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    for (const waiter of this.waiting.drain()) waiter.reject(new Error('the expression evaluator is closed'));
    await Promise.all([...this.all].map((worker) => worker.terminate()));
    this.all.clear();
    this.idle.length = 0;
  }
}
