/**
 * A queue shared fairly between tenants: each tenant's items wait behind that tenant's own, never behind
 * another's. The next item is taken from the tenant with the fewest items being served at the moment
 * (a tenant keeping every worker busy comes after one that has none), and between tenants equally
 * served, in turn (round-robin). `take` counts the item as served until `done` is called for its tenant;
 * an item served without waiting is counted with `started`.
 */
export class FairQueue<T> {
  /** Waiting items per tenant; a tenant is present only while it has some, in the order of its turn. */
  private readonly waiting = new Map<string, T[]>();
  private readonly serving = new Map<string, number>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Items of the tenant being served now. */
  servingOf(tenant: string): number {
    return this.serving.get(tenant) ?? 0;
  }

  push(tenant: string, item: T): void {
    const queue = this.waiting.get(tenant);
    if (queue) queue.push(item);
    else this.waiting.set(tenant, [item]);
    this.count++;
  }

  /** The next item to serve, counted as served for its tenant; undefined when nothing waits. */
  take(): T | undefined {
    let chosen: string | undefined;
    for (const tenant of this.waiting.keys())
      if (chosen === undefined || this.servingOf(tenant) < this.servingOf(chosen)) chosen = tenant;
    if (chosen === undefined) return undefined;
    const queue = this.waiting.get(chosen)!;
    const item = queue.shift()!;
    // The tenant's turn is over: it goes to the back of the line (or leaves it, having nothing more).
    this.waiting.delete(chosen);
    if (queue.length) this.waiting.set(chosen, queue);
    this.count--;
    this.started(chosen);
    return item;
  }

  /** An item of the tenant is served without having waited. */
  started(tenant: string): void {
    this.serving.set(tenant, this.servingOf(tenant) + 1);
  }

  /** An item of the tenant has been served. */
  done(tenant: string): void {
    const serving = this.servingOf(tenant) - 1;
    if (serving > 0) this.serving.set(tenant, serving);
    else this.serving.delete(tenant);
  }

  /** Takes every waiting item out (the queue is closing); their tenants are not counted as served. */
  drain(): T[] {
    const items = [...this.waiting.values()].flat();
    this.waiting.clear();
    this.count = 0;
    return items;
  }
}
