import { randomUUID } from 'node:crypto';
import { createServer, IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DataSource } from 'typeorm';
import { TenantKeysService } from '../../src/common/crypto/tenant-keys.service';
import { EventOutbox, OutboxEvent } from '../../src/common/events/event-outbox';
import type { Change } from '../../src/common/unit-of-work/change';
import { UnitOfWork } from '../../src/common/unit-of-work/unit-of-work';
import { generateWebhookSecret, sealWebhookSecret } from '../../src/modules/webhooks/webhook-secret';
import type { TestApp } from './app';
import { waitFor } from './wait';

/**
 * A webhook row written directly (as the management API would), its secret sealed under the tenant's
 * key. Answers its id and the clear secret.
 */
export async function createWebhookRow(
  db: DataSource,
  tenantKeys: TenantKeysService,
  tenantId: string,
  webhook: { url: string; events: string[]; status?: 'enabled' | 'disabled' },
): Promise<{ id: string; secret: string }> {
  const id = randomUUID();
  const secret = generateWebhookSecret();
  const key = (await tenantKeys.keysFor(tenantId)).encryption;
  await db.query(
    `INSERT INTO webhooks (tenant_id, id, name, url, events, status, secret, created_at)
     VALUES ($1, $2, 'test webhook', $3, $4, $5, $6, now())`,
    [
      tenantId,
      id,
      webhook.url,
      webhook.events,
      webhook.status ?? 'enabled',
      sealWebhookSecret(key, tenantId, id, secret),
    ],
  );
  return { id, secret };
}

/** Runs `work` in one change of `t` (a transaction whose after-commit work runs, as a service's would). */
export function inTransaction<T>(t: TestApp, work: (change: Change) => Promise<T>): Promise<T> {
  return t.app.get(UnitOfWork).transaction({}, work);
}

/** Records events through the outbox, in a change of their own. */
export function recordEvents(t: TestApp, events: OutboxEvent | OutboxEvent[]): Promise<void> {
  return inTransaction(t, (change) =>
    t.app.get(EventOutbox).record(change, Array.isArray(events) ? events : [events]),
  );
}

/** One request a receiver got. */
export interface Delivered {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** How a receiver answers: a status, `close` (drops the connection), `hang` (never answers), or later. */
export type Answer = number | 'close' | 'hang' | Promise<number>;

/**
 * A local webhook receiver on 127.0.0.1: each webhook gets a path of its own (`hook()`), answered by
 * the function given for it (200 by default); every request is recorded.
 */
export class Receiver {
  readonly received: Delivered[] = [];
  private readonly answers = new Map<string, (request: Delivered, n: number) => Answer>();
  private readonly hanging = new Set<ServerResponse>();
  private server!: Server;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const request: Delivered = {
          path: req.url!,
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        };
        this.received.push(request);
        const n = this.to(request.path).length;
        const answer = this.answers.get(request.path)?.(request, n) ?? 200;
        if (answer === 'close') req.socket.destroy();
        else if (answer === 'hang') this.hanging.add(res);
        else
          void Promise.resolve(answer).then((status) => {
            if (!res.destroyed) res.writeHead(status, { 'Content-Type': 'text/plain' }).end('ok');
          });
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  /** A new path on this receiver; `answer(request, n)` answers its n-th request (from 1). */
  hook(answer?: (request: Delivered, n: number) => Answer): string {
    const path = `/hook/${randomUUID()}`;
    if (answer) this.answers.set(path, answer);
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  /** The requests made to a hook (its URL or path), in arrival order. */
  to(url: string): Delivered[] {
    const path = url.replace(/^http:\/\/[^/]+/, '');
    return this.received.filter((r) => r.path === path);
  }

  /** Waits until `check` holds (polling every 20 ms), or fails after `timeoutMs`. */
  async waitFor(check: () => boolean, timeoutMs = 10_000, what = 'the expected deliveries'): Promise<void> {
    await waitFor(check, { timeoutMs, what });
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** The JSON body of a delivery. */
export const payload = (request: Delivered): Record<string, unknown> =>
  JSON.parse(request.body) as Record<string, unknown>;
