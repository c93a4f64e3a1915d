import { TransactionHost } from '@nestjs-cls/transactional';
import { ClsServiceManager } from 'nestjs-cls';

/**
 * The resource a request with `BT-IDEMPOTENCY-KEY` creates before it calls a vendor.
 *
 * A handler that commits its resource and then calls a processor can die between the two (kill -9):
 * the client never gets an answer, and its retry takes over the stale claim. Processed as new, the
 * retry would create (and charge) a second resource. So the handler pins the id of what it created on
 * its claim, in the transaction that inserts it (`pin`); a retry that takes over a stale claim with a
 * pinned resource is told so (`resumed`) and answers that resource as it stands instead.
 *
 * The idempotency interceptor binds both once it holds the request's claim. Without a key, or on a
 * route the interceptor leaves alone, `pin` does nothing and `resumed` is undefined.
 */
export interface ResourceBinding {
  /** The resource the request whose stale claim this one took over had pinned. */
  resumed?: string;
  /** Pins `resourceId` on the request's claim, in the current transaction. */
  pin(resourceId: string): Promise<void>;
}

const BINDING_KEY = 'idempotency:resource';

function binding(): ResourceBinding | undefined {
  const cls = ClsServiceManager.getClsService();
  return cls.isActive() ? cls.get<ResourceBinding | undefined>(BINDING_KEY) : undefined;
}

/** Called by the idempotency interceptor once it holds the claim of the current request. */
export function bindIdempotentResource(resource: ResourceBinding): void {
  const cls = ClsServiceManager.getClsService();
  if (cls.isActive()) cls.set(BINDING_KEY, resource);
}

export const IdempotentResource = {
  /**
   * Pins the resource the request created on its idempotency claim. Call it in the transaction that
   * inserts the resource, so that the two commit together; it fails (and with it that transaction)
   * when a retry took the claim over meanwhile, so that two requests never both create.
   */
  async pin(resourceId: string): Promise<void> {
    const bound = binding();
    if (!bound) return;
    if (!TransactionHost.getInstance().isTransactionActive())
      throw new Error('IdempotentResource.pin needs the transaction that creates the resource');
    await bound.pin(resourceId);
  },

  /** The resource an interrupted earlier run of this very request created; undefined otherwise. */
  resumed(): string | undefined {
    return binding()?.resumed;
  },
};
