import { Injectable } from '@nestjs/common';

/** How many attempts in a row, within WINDOW_MS, must have found nothing listening. */
export const BREAKER_ATTEMPTS = 5;
export const BREAKER_WINDOW_MS = 60_000;
/** How long such a connection is then skipped while another candidate remains. */
export const BREAKER_OPEN_MS = 30_000;

/**
 * A per-instance breaker over connections (docs/routing.md): a connection whose last 5 attempts within
 * 60 seconds all ended `processor_unavailable` (nothing reached the vendor, or HTTP 429) is skipped for
 * the next 30 seconds while another candidate remains. Attempts made with `connection_id` count too.
 * Kept in memory: each instance learns on its own, which is enough to stop sending every payment first
 * to a vendor that is down.
 */
@Injectable()
export class ConnectionBreaker {
  private readonly recent = new Map<string, { at: number; unavailable: boolean }[]>();
  private readonly openUntil = new Map<string, number>();

  /** Records how an attempt at the connection ended. */
  record(connectionId: string, unavailable: boolean, now: number): void {
    const list = (this.recent.get(connectionId) ?? []).slice(-(BREAKER_ATTEMPTS - 1));
    list.push({ at: now, unavailable });
    this.recent.set(connectionId, list);
    if (!unavailable) {
      this.openUntil.delete(connectionId);
      return;
    }
    if (
      list.length === BREAKER_ATTEMPTS &&
      list.every((a) => a.unavailable && now - a.at <= BREAKER_WINDOW_MS)
    )
      this.openUntil.set(connectionId, now + BREAKER_OPEN_MS);
  }

  /** Whether the connection is skipped now. */
  isOpen(connectionId: string, now: number): boolean {
    const until = this.openUntil.get(connectionId);
    return until !== undefined && now < until;
  }

  /**
   * The index of the first candidate from `from` on to try now: an open connection is skipped unless it
   * is the last candidate. -1 when none is left.
   */
  next(candidates: readonly { row: { id: string } }[], from: number, now: number): number {
    for (let i = from; i < candidates.length; i++)
      if (i === candidates.length - 1 || !this.isOpen(candidates[i].row.id, now)) return i;
    return -1;
  }
}
