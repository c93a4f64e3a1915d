import type { EntityManager } from 'typeorm';
import type { AuditActor, AuditEntry } from '../audit/audit.types';
import type { OutboxEvent } from '../events/event-outbox';
import { PieceBuilder, PieceOptions, WriteBatch } from './write-batch';

/**
 * How a change reaches the database.
 * - `transaction`: BEGIN ... COMMIT; the work may read, lock and write (`query`, `manager`). Its
 *   `write`s are gathered as in a one-statement change and sent as one statement when the work next reads
 *   through `query` (so it reads its own writes) or as it ends, with the audit rows, events and
 *   idempotency record: a transaction that locks, reads and then writes is BEGIN, its reads, one write
 *   and COMMIT.
 * - `statement`: every write of the change, with its audit rows, events and idempotency record, is sent
 *   as one statement of data-modifying CTEs once the work has returned (atomic without BEGIN and COMMIT,
 *   one round trip). The work reads nothing from the database through the change; it only `write`s.
 */
export type ChangeMode = 'transaction' | 'statement';

/** Where a repository runs SQL: a change's transaction, or the pool for a read outside any change. */
export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  readonly manager: EntityManager;
}

/**
 * The idempotency claim of the request a change answers (`BT-IDEMPOTENCY-KEY`), handed in by the
 * idempotency interceptor through the origin. The change stores the response with itself, so that a
 * change never commits without its record and a record never exists without its change.
 */
export interface IdempotencyClaim {
  /** The resource the interrupted earlier run of this very request pinned on the claim. */
  readonly resumed?: string;
  /**
   * Adds the write that stores `result` as the request's response to the change (refusing the whole
   * change when a retry took the claim over meanwhile). Called by the runner as the change commits.
   */
  record(change: Change, result: unknown): Promise<void>;
  /** Pins the resource a change creates on the claim, in that change (see `Change.pinResource`). */
  pin(change: Change, resourceId: string): Promise<void>;
  /** The response holds data in clear: it is answered once and never stored for a replay. */
  withhold(): void;
  /**
   * On a route whose handler reads the body itself (`@ClaimedAfterBody`): claims the key with the body's
   * digest. Throws the 409 or 422 of a key in flight or used with another body, or, for a retry of a
   * completed request, what makes the interceptor answer its stored response: the handler stops there.
   */
  claimBody?(digest: string): Promise<void>;
}

/** Who makes a change, and the request it answers. */
export interface Origin {
  /** The actor of the change's audit rows (a principal is one); a job's change has none and writes none. */
  readonly actor?: AuditActor;
  /** The request's idempotency claim, when the request carries a key. */
  readonly idempotency?: IdempotencyClaim;
}

/**
 * The origin for a change that commits part of a request's work before the rest (orchestration commits
 * a transaction before it calls a vendor): it may pin what it creates on the request's idempotency claim,
 * but does not record the response, which the idempotency interceptor stores after the handler.
 */
export function partOf(origin: Origin): Origin {
  const claim = origin.idempotency;
  if (!claim) return origin;
  return {
    ...origin,
    idempotency: {
      resumed: claim.resumed,
      record: () => Promise.resolve(),
      pin: (change, resourceId) => claim.pin(change, resourceId),
      withhold: () => claim.withhold(),
    },
  };
}

/** The origin of the service's own work (jobs, the command line): a system actor, no request. */
export const systemOrigin = (tenantId: string): Origin => ({
  actor: { tenantId, applicationId: null, system: true },
});

/**
 * One write: made by `UnitOfWork` for each change and handed as a parameter to every service and
 * repository that takes part. Whatever the write must also record is added to it where the code does
 * it: audit rows (`audit`), webhook events (`emit`), the idempotency record (from its origin, by the
 * runner), and work that must wait for the commit (`afterCommit`).
 */
export class Change implements Queryable {
  /** @internal the runner's */
  readonly entries: AuditEntry[] = [];
  /** @internal the runner's */
  readonly events: OutboxEvent[] = [];
  /** @internal the runner's */
  readonly committed: (() => void)[] = [];
  /** @internal the runner's */
  readonly rolledBack: (() => void)[] = [];
  /** The writes gathered and not yet sent. */
  private pending = new WriteBatch();

  /**
   * @param transaction the transaction's entity manager (a `transaction` change); none for a `statement`
   * @param send how SQL reaches the database: the transaction's connection, or the pool for the one
   *   statement; `prepared` for the change's writes (see `UnitOfWork`), not for its reads, nor for writes
   *   that read tables that grow (`PieceOptions.reads`)
   */
  constructor(
    readonly origin: Origin,
    readonly mode: ChangeMode,
    private readonly transaction: EntityManager | undefined,
    private readonly send: (sql: string, params: unknown[], prepared: boolean) => Promise<unknown[]>,
  ) {}

  get actor(): AuditActor {
    if (!this.origin.actor) throw new Error('a change without an actor records no audit rows');
    return this.origin.actor;
  }

  /**
   * The transaction's entity manager; a `statement` change has none. Refused while writes are pending:
   * what it ran would not see them (read through `query`, which sends them first).
   */
  get manager(): EntityManager {
    if (!this.transaction) throw new Error('a one-statement change reads nothing and has no entity manager');
    if (this.pending.size)
      throw new Error(
        'this change has writes not sent yet: read through change.query, which sends them first',
      );
    return this.transaction;
  }

  /**
   * Runs SQL in the change's transaction, after the writes gathered so far (so it sees them); a
   * `statement` change refuses (it only `write`s).
   */
  async query<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    if (!this.transaction) throw new Error('a one-statement change reads nothing and has no entity manager');
    await this.flush();
    return (await this.send(sql, params, false)) as T[];
  }

  /**
   * A write whose answer nothing needs before the change ends: it joins the statement that sends the
   * change's writes (as it ends, or, in a `transaction`, before its next `query`); `then` gets its result
   * once that has run, and may throw to fail the change (a `transaction` only: a one-statement change has
   * committed by then). Where its `refuse` condition holds, the write fails, and the whole change with it,
   * with the error `refused` makes.
   */
  async write(build: PieceBuilder, options: PieceOptions = {}): Promise<void> {
    this.pending.add(build, options);
    return Promise.resolve();
  }

  /**
   * Sends the writes gathered so far as one statement (the runner does as the change ends, `query`
   * before it reads); a service that hands its change on to code using `manager` sends them first.
   */
  async flush(): Promise<void> {
    if (!this.pending.size) return;
    const batch = this.pending;
    this.pending = new WriteBatch();
    await batch.run((sql, params) => this.send(sql, params, !batch.reads));
  }

  /** Adds audit rows, written with the change (as its actor). */
  audit(...entries: AuditEntry[]): void {
    this.entries.push(...entries);
  }

  /** Adds webhook events, recorded in the outbox with the change, in order. */
  emit(...events: OutboxEvent[]): void {
    this.events.push(...events);
  }

  /** Runs `fn` once the change has committed; never if it rolled back. */
  afterCommit(fn: () => void): void {
    this.committed.push(fn);
  }

  /** Runs `fn` if the change fails (nothing of it committed), before the error reaches its caller. */
  afterRollback(fn: () => void): void {
    this.rolledBack.push(fn);
  }

  /** The resource an interrupted earlier run of this very request created (idempotency); else undefined. */
  get resumed(): string | undefined {
    return this.origin.idempotency?.resumed;
  }

  /**
   * Pins a resource this change creates on the request's idempotency claim, so that a retry after this
   * process died answers it instead of creating another; refuses the change when a retry took the claim
   * over meanwhile. Without a key it does nothing.
   */
  async pinResource(resourceId: string): Promise<void> {
    await this.origin.idempotency?.pin(this, resourceId);
  }

  /** The answer holds data in clear: it is never stored for a replay. */
  withholdFromReplay(): void {
    this.origin.idempotency?.withhold();
  }
}
