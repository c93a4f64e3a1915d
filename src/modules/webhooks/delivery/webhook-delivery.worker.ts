import {
  BeforeApplicationShutdown,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
} from '@nestjs/common';
import { Webhook } from 'standardwebhooks';
import { TenantKeysService } from '../../../common/crypto/tenant-keys.service';
import { Clock } from '../../../common/jobs/clock';
import { ShutdownState } from '../../../common/lifecycle/shutdown-state';
import { Metrics } from '../../../common/metrics/metrics';
import { OutboundHttp } from '../../../common/outbound/outbound-http.service';
import { OutboundError, OutboundRequest } from '../../../common/outbound/outbound.types';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { AppConfig } from '../../../config/app-config';
import { openWebhookSecret } from '../webhook-secret';
import { ClaimedDelivery, DeliveriesRepository } from './deliveries.repository';
import { DeliveryNudge } from './delivery-nudge';

/** A receiver has this long, from connecting to the last byte of its answer, to answer 2xx. */
export const SEND_TIMEOUT_MS = 10_000;
/** Deliveries claimed by one statement. */
const BATCH = 20;
/** Sends one instance has under way at most; claims stop while they are all taken. */
const MAX_IN_FLIGHT = 256;
/** What is read of a receiver's answer (its body is ignored); a larger one is a failed attempt. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * Delivers the outbox's deliveries. On every instance with jobs enabled, it
 * claims due deliveries every WEBHOOK_POLL_MS, and at once when this process commits new ones
 * (DeliveryNudge) or finishes a send (the next event of that entity may now go). Claims are leased
 * (`FOR UPDATE SKIP LOCKED`, see DeliveriesRepository), so instances share the work without sending a
 * delivery twice while it is being sent; a delivery is sent again only after a failed attempt or when
 * its worker died (its lease ran out), always with the same `webhook-id`. Sends run concurrently and
 * are not awaited by the claims, so a receiver that hangs holds only its own deliveries. When the process
 * stops (ShutdownState), claims stop at once and the sends under way finish; those still running by the
 * shutdown's deadline are released (DeliveriesRepository.release), so that no delivery stays claimed by a
 * process that is gone.
 */
@Injectable()
export class WebhookDeliveryWorker
  implements OnApplicationBootstrap, OnModuleDestroy, BeforeApplicationShutdown
{
  private readonly logger = new Logger('Webhooks');
  private started = false;
  private stopping = false;
  private timer?: NodeJS.Timeout;
  /** The claiming loop, while it runs; `pollAgain` asks it to go round once more. */
  private polling?: Promise<void>;
  private pollAgain = false;
  /** Sends under way, with the delivery each holds. */
  private readonly sending = new Map<Promise<void>, ClaimedDelivery>();
  /** Deliveries released while their send was still running: whatever it ends with is not recorded. */
  private readonly released = new Set<string>();
  /** The application closes without a graceful stop before (tests): a send cut short is left to its lease. */
  private closing = false;

  constructor(
    private readonly deliveries: DeliveriesRepository,
    private readonly outbound: OutboundHttp,
    private readonly tenantKeys: TenantKeysService,
    private readonly nudge: DeliveryNudge,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly metrics: Metrics,
    private readonly work: UnitOfWork,
    private readonly shutdown: ShutdownState,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.JOBS_ENABLED || !this.config.WEBHOOK_DELIVERY_ENABLED) return;
    this.started = true;
    this.shutdown.register({ name: 'webhook deliveries', stop: (deadline) => this.stop(deadline) });
    // Deliveries sign with secrets sealed under tenant keys: a sealed server starts them once unsealed.
    this.tenantKeys.whenUnsealed(() => {
      this.nudge.listen(() => this.wake());
      this.wake();
    });
  }

  /**
   * The graceful stop: no claim after this; the sends under way may finish until `deadline` (epoch ms),
   * and the deliveries of those still running then are released.
   */
  async stop(deadline: number): Promise<string> {
    this.stopping = true;
    clearTimeout(this.timer);
    await this.polling;
    const sends = this.sending.size;
    if (!sends) return 'none under way';
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.sending.keys()]),
      new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now())))),
    ]);
    clearTimeout(timer);
    const unfinished = [...this.sending.values()];
    for (const delivery of unfinished) this.released.add(delivery.id);
    const released = unfinished.length
      ? await this.work.transaction({}, (change) =>
          this.deliveries.release(change, unfinished, this.clock.now()),
        )
      : 0;
    return `${sends - unfinished.length} finished, ${released} released`;
  }

  /** No claim after this; claims under way finish. */
  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    this.closing = true;
    clearTimeout(this.timer);
    await this.polling;
  }

  /**
   * Sends under way end here: the outbound component has closed its connections by now (its own
   * onModuleDestroy), and an attempt cut short that way is not recorded; its lease runs out and it is
   * sent again, by another instance or after a restart.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await Promise.allSettled([...this.sending.keys()]);
  }

  /**
   * One round, for tests and for a manual retry: claims the due deliveries (up to a batch) and sends
   * them, resolving once every attempt is recorded. Answers how many were claimed.
   */
  async deliverDue(): Promise<number> {
    const claimed = await this.claim(BATCH);
    await Promise.all(claimed.map((delivery) => this.send(delivery)));
    return claimed.length;
  }

  /** Claims at once (or once more, if a claim is running), then waits WEBHOOK_POLL_MS for the next poll. */
  private wake(): void {
    if (!this.started || this.stopping) return;
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    clearTimeout(this.timer);
    this.polling = this.poll().finally(() => {
      this.polling = undefined;
      if (!this.stopping) this.timer = setTimeout(() => this.wake(), this.config.WEBHOOK_POLL_MS);
    });
  }

  /** Claims batches while they come back full and sends have room; sends are not awaited. */
  private async poll(): Promise<void> {
    do {
      this.pollAgain = false;
      try {
        for (;;) {
          const room = Math.min(BATCH, MAX_IN_FLIGHT - this.sending.size);
          if (this.stopping || room <= 0) break;
          const claimed = await this.claim(room);
          for (const delivery of claimed) void this.send(delivery);
          if (claimed.length < room) break;
        }
      } catch (error) {
        this.logger.error({ err: error }, 'could not claim webhook deliveries');
        return;
      }
    } while (this.pollAgain && !this.stopping);
  }

  /** One change of the worker's own (no actor: it writes no audit row). */
  private claim(limit: number): Promise<ClaimedDelivery[]> {
    const now = this.clock.now();
    const leasedUntil = new Date(now.getTime() + this.config.WEBHOOK_LEASE_SECONDS * 1000);
    return this.work.transaction({}, (change) => this.deliveries.claimDue(change, now, leasedUntil, limit));
  }

  private send(delivery: ClaimedDelivery): Promise<void> {
    const run = this.attempt(delivery)
      .catch((error: unknown) =>
        this.logger.error(
          { err: error, webhook_id: delivery.webhook_id, delivery_id: delivery.id },
          'could not record a webhook delivery attempt',
        ),
      )
      .finally(() => {
        this.sending.delete(run);
        this.wake();
      });
    this.sending.set(run, delivery);
    return run;
  }

  /** Sends once and records the outcome: a 2xx succeeds; anything else is retried per WEBHOOK_RETRY_SECONDS. */
  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const where = { webhook_id: delivery.webhook_id, delivery_id: delivery.id, attempt: delivery.attempts };
    let status: number | null = null;
    let failure: string | undefined;
    try {
      status = (await this.outbound.send(await this.request(delivery))).status;
    } catch (error) {
      // Released, or cut short by the application's close: another attempt comes (the lease's end brings
      // back one that was cut).
      if (this.closing || this.released.has(delivery.id)) return;
      if (error instanceof OutboundError) failure = error.failure;
      else {
        failure = 'error';
        this.logger.warn({ err: error, ...where }, 'webhook delivery could not be sent');
      }
    }
    if (this.released.has(delivery.id)) return;
    const now = this.clock.now();
    if (status !== null && status >= 200 && status < 300) {
      const code = status;
      const recorded = await this.work.transaction({}, (change) =>
        this.deliveries.recordSuccess(change, delivery, code, now),
      );
      // Not recorded: the lease ran out and another worker has the delivery now (it counts its own attempt).
      if (recorded) this.metrics.webhookDelivery('succeeded');
      this.logger.debug({ ...where, status_code: status }, 'webhook delivered');
      return;
    }
    const delays = this.config.webhookRetryDelaysMs;
    const retryAt =
      delivery.attempts <= delays.length ? new Date(now.getTime() + delays[delivery.attempts - 1]) : null;
    const outcome = await this.work.transaction({}, (change) =>
      this.deliveries.recordFailure(change, delivery, status, retryAt, now),
    );
    if (outcome.status) this.metrics.webhookDelivery(outcome.status === 'failed' ? 'failed' : 'retried');
    const detail = { ...where, status_code: status, ...(failure ? { failure } : {}) };
    if (outcome.status === 'failed') {
      this.logger.warn(detail, 'webhook delivery failed for good');
      if (outcome.webhookDisabled)
        this.logger.warn(
          { webhook_id: delivery.webhook_id },
          'webhook disabled: its last 100 deliveries failed',
        );
    } else {
      this.logger.log({ ...detail, next_attempt_at: retryAt }, 'webhook delivery attempt failed');
    }
  }

  /**
   * The signed request (Standard Webhooks): `webhook-id` is the event's id on every attempt, and the
   * signature covers `<id>.<timestamp>.<body>` with the webhook's secret. The timestamp is the real
   * time of sending (what receivers check it against), not the service's test clock.
   */
  private async request(delivery: ClaimedDelivery): Promise<OutboundRequest> {
    const key = (await this.tenantKeys.keysFor(delivery.tenant_id)).encryption;
    const secret = openWebhookSecret(key, delivery.tenant_id, delivery.webhook_id, delivery.secret);
    const body = JSON.stringify({
      id: delivery.event_id,
      type: delivery.event_type,
      tenant_id: delivery.tenant_id,
      created_at: delivery.event_created_at.toISOString(),
      data: delivery.event_data,
    });
    const sentAt = new Date();
    return {
      url: delivery.url,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': delivery.event_id,
        'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign(delivery.event_id, sentAt, body),
      },
      body: Buffer.from(body, 'utf8'),
      timeoutMs: SEND_TIMEOUT_MS,
      maxResponseBytes: MAX_ANSWER_BYTES,
    };
  }
}
