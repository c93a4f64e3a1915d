import { Inject, Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { AppConfig } from '../../config/app-config';

/** What became of one webhook delivery attempt. */
export type WebhookDeliveryOutcome = 'succeeded' | 'retried' | 'failed';

/** The Prometheus text exposition format, version 0.0.4. */
export const METRICS_CONTENT_TYPE: string = Registry.PROMETHEUS_CONTENT_TYPE;

/** Request durations, in seconds: from a token read (a few ms) to a proxy's 30 s timeout. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The process's Prometheus metrics (`GET /metrics` when METRICS_ENABLED). Modules count through these
 * methods and never import prom-client. Each application instance has a registry of its own, not
 * prom-client's global one (tests start several applications in one process). Every label takes its
 * values from a small fixed set (token types, transaction statuses, job names, route templates):
 * never an id, a key or a value a caller sent.
 */
@Injectable()
export class Metrics {
  readonly registry = new Registry();

  private readonly requestDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP requests by method, route template (unmatched: no route) and status, with their duration',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  private readonly tokensCreatedTotal = new Counter({
    name: 'vault_tokens_created_total',
    help: 'Tokens created, by type, once committed (an answer deduplicated to an existing token creates none)',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });

  private readonly transactionsTotal = new Counter({
    name: 'vault_transactions_total',
    help: 'Transactions entering each status (their creation included), once committed',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  private readonly paymentAttemptsTotal = new Counter({
    name: 'vault_payment_attempts_total',
    help: "Authorization attempts by formula and outcome (`processing`: the vendor's answer is unknown)",
    labelNames: ['formula', 'outcome'] as const,
    registers: [this.registry],
  });

  private readonly jobRunsTotal = new Counter({
    name: 'vault_job_runs_total',
    help: 'Runs of background jobs on this instance (a run another instance took is not counted)',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });

  private readonly jobFailuresTotal = new Counter({
    name: 'vault_job_failures_total',
    help: 'Runs of background jobs on this instance that ended in an error',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });

  private readonly webhookDeliveriesTotal = new Counter({
    name: 'vault_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: succeeded, retried (failed, another attempt is due), failed (for good)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  private readonly cardEnumerationRefusalsTotal = new Counter({
    name: 'vault_card_enumeration_refusals_total',
    help: 'Tokenize requests refused (429 card_enumeration_suspected) past the card enumeration limit',
    registers: [this.registry],
  });

  private readonly cardEnumerationConflictsTotal = new Counter({
    name: 'vault_card_enumeration_conflicts_total',
    help: 'Tokenize statements not written because another request counted card numbers of the same group between their read and their write (tried again)',
    registers: [this.registry],
  });

  constructor(config: AppConfig, @Inject(DataSource) dataSource: DataSource) {
    const pool = (read: (pool: Pool) => number) =>
      function (this: Gauge) {
        const current = poolOf(dataSource);
        if (current) this.set(read(current));
      };
    new Gauge({
      name: 'vault_db_pool_total',
      help: 'Database connections open in the pool',
      registers: [this.registry],
      collect: pool((p) => p.totalCount),
    });
    new Gauge({
      name: 'vault_db_pool_idle',
      help: 'Database connections open and idle in the pool',
      registers: [this.registry],
      collect: pool((p) => p.idleCount),
    });
    new Gauge({
      name: 'vault_db_pool_waiting',
      help: 'Queries waiting for a database connection',
      registers: [this.registry],
      collect: pool((p) => p.waitingCount),
    });
    new Gauge({
      name: 'vault_db_pool_max',
      help: 'Connections the pool may open (DB_POOL_SIZE; 1 with the embedded database)',
      registers: [this.registry],
      collect: pool((p) => p.options.max ?? 0),
    });
    // Process CPU, memory, handles and event loop lag; only when they are served (the lag monitor runs).
    if (config.METRICS_ENABLED) collectDefaultMetrics({ register: this.registry });
  }

  /** One HTTP request answered (`route` is the matched route's template, never the concrete path). */
  requestFinished(method: string, route: string, status: number, seconds: number): void {
    this.requestDuration.observe({ method, route, status }, seconds);
  }

  /** Tokens committed, one type per token. */
  tokensCreated(types: readonly string[]): void {
    for (const type of types) this.tokensCreatedTotal.inc({ type });
  }

  /** A tokenize refused by the card enumeration guard. */
  cardEnumerationRefused(): void {
    this.cardEnumerationRefusalsTotal.inc();
  }

  /** A tokenize statement the card enumeration guard made try again (a concurrent count in its groups). */
  cardEnumerationConflict(): void {
    this.cardEnumerationConflictsTotal.inc();
  }

  /** A transaction entered `status` (its creation, or a transition). */
  transactionEntered(status: string): void {
    this.transactionsTotal.inc({ status });
  }

  /** An authorization attempt ended (or was left to settlement: `processing`). */
  paymentAttempted(formula: string, outcome: string): void {
    this.paymentAttemptsTotal.inc({ formula, outcome });
  }

  jobRan(job: string): void {
    this.jobRunsTotal.inc({ job });
  }

  jobFailed(job: string): void {
    this.jobFailuresTotal.inc({ job });
  }

  webhookDelivery(outcome: WebhookDeliveryOutcome): void {
    this.webhookDeliveriesTotal.inc({ outcome });
  }

  /**
   * Calls into the HSM (KEY_PROVIDER=pkcs11), read from the device's own counts when scraped: wraps,
   * unwraps, failures (each answered 503 `key_provider_unavailable`) and sessions opened.
   */
  keyProviderCalls(read: () => Record<'wrap' | 'unwrap' | 'failed' | 'opened', number>): void {
    new Counter({
      name: 'vault_key_provider_operations_total',
      help: 'Calls into the HSM holding the key-encrypting keys (KEY_PROVIDER=pkcs11), by operation: wrap, unwrap, failed, opened (a session opened)',
      labelNames: ['operation'] as const,
      registers: [this.registry],
      collect(this: Counter<'operation'>) {
        this.reset();
        for (const [operation, count] of Object.entries(read())) this.inc({ operation }, count);
      },
    });
  }

  /** The exposition (Prometheus text format 0.0.4). */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }
}

/**
 * The pg Pool behind TypeORM's data source (also with the embedded database, whose pool holds its one
 * connection), or undefined while the data source is not open.
 */
function poolOf(dataSource: DataSource): Pool | undefined {
  if (!dataSource.isInitialized) return undefined;
  return (dataSource.driver as PostgresDriver).master as Pool | undefined;
}
