import type { Change, IdempotencyClaim } from '../../common/unit-of-work/change';
import { conflict } from '../../common/errors/problem.exception';
import type { IdempotencyService, IdempotencyScope, StoredResponse } from './idempotency.service';

const takenOver = () =>
  conflict('A retry with this idempotency key took over this request; retry shortly.', {
    'Retry-After': '1',
  });

/**
 * The claim a request with `BT-IDEMPOTENCY-KEY` holds while its handler runs, handed to the handler's
 * change through its origin (`@Origin()`): the change stores the response with itself (`record`), pins
 * what it creates before a vendor call (`pin`), or marks the answer as never to be replayed (`withhold`).
 * Once a change has committed the response, the interceptor answers exactly those bytes.
 */
export class RequestClaim implements IdempotencyClaim {
  /** The response a committed change stored. */
  recorded?: StoredResponse;
  withheld = false;
  private pending = false;

  constructor(
    private readonly service: IdempotencyService,
    readonly scope: IdempotencyScope,
    readonly claimId: string,
    readonly resumed: string | undefined,
    /** The handler's result as the bytes sent and stored (status and headers from the response). */
    private readonly serialize: (result: unknown) => StoredResponse,
  ) {}

  async record(change: Change, result: unknown): Promise<void> {
    if (this.withheld) return;
    // One change answers a request: a second would commit without the record (or store it twice).
    if (this.pending || this.recorded)
      throw new Error('a second change recorded the response of a request with an idempotency key');
    this.pending = true;
    const stored = this.serialize(result);
    try {
      await this.service.completeWithChange(change, this.scope, this.claimId, stored, takenOver);
    } catch (error) {
      this.pending = false;
      throw error;
    }
    change.afterCommit(() => {
      this.recorded = stored;
    });
    // A change that failed after this (its statement refused) recorded nothing: another may, as a
    // tokenize tried again does.
    change.afterRollback(() => {
      this.pending = false;
    });
  }

  async pin(change: Change, resourceId: string): Promise<void> {
    if (!(await this.service.pin(change, this.scope, this.claimId, resourceId))) throw takenOver();
  }

  withhold(): void {
    this.withheld = true;
  }
}

/** Thrown where the request turns out to be a retry of a completed one: the interceptor answers `response`. */
export class ReplayInstead extends Error {
  constructor(readonly response: StoredResponse) {
    super('a retry of a completed request: its stored response is answered');
  }
}

/**
 * The claim of a route whose handler reads the body itself (`@ClaimedAfterBody`): nothing is claimed
 * until the handler calls `claimBody` with the body's digest; from then on it is that request's claim.
 */
export class BodyClaim implements IdempotencyClaim {
  /** The claim taken by `claimBody`. */
  held?: RequestClaim;

  constructor(private readonly claimWith: (digest: string) => Promise<RequestClaim>) {}

  get resumed(): string | undefined {
    return this.held?.resumed;
  }

  async claimBody(digest: string): Promise<void> {
    if (this.held) throw new Error('a request claimed its idempotency key twice');
    this.held = await this.claimWith(digest);
  }

  record(change: Change, result: unknown): Promise<void> {
    return this.claimed().record(change, result);
  }

  pin(change: Change, resourceId: string): Promise<void> {
    return this.claimed().pin(change, resourceId);
  }

  withhold(): void {
    this.claimed().withhold();
  }

  private claimed(): RequestClaim {
    if (!this.held) throw new Error('a route claimed after its body wrote before it claimed (claimBody)');
    return this.held;
  }
}
