import { isIPv6 } from 'node:net';

/** How many client addresses are followed at once; past it the address followed longest is forgotten. */
export const MAX_TRACKED_ADDRESSES = 10_000;
const WINDOW_MS = 60_000;

interface Window {
  start: number;
  failures: number;
}

/**
 * The part of a client address failures are counted under: an IPv4 address, or the /64 network of an
 * IPv6 address (one subscriber usually holds a whole /64, so counting single addresses would be no limit).
 */
export function addressGroup(address: string): string {
  const plain = address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
  if (!isIPv6(plain)) return plain;
  const [head, tail = ''] = plain.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = plain.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((group) => group.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * Failed authentications per client address and clock-aligned minute, in memory (each instance counts
 * its own). Kept out of the database on purpose: failures are what anyone can produce without holding
 * anything, so counting them must cost no write; and the map is bounded, so that many addresses cost a
 * fixed amount of memory at most (the oldest address is forgotten first).
 */
export class AuthFailureCounter {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly limit: number,
    private readonly maxAddresses = MAX_TRACKED_ADDRESSES,
  ) {}

  /** Seconds until the address may try again when it has used up its failures this minute; else undefined. */
  blockedFor(address: string, now: number): number | undefined {
    const window = this.current(addressGroup(address), now);
    if (!window || window.failures < this.limit) return undefined;
    return Math.max(1, Math.ceil((window.start + WINDOW_MS - now) / 1000));
  }

  /** Counts one failed authentication of the address. */
  record(address: string, now: number): void {
    const group = addressGroup(address);
    const start = Math.floor(now / WINDOW_MS) * WINDOW_MS;
    const window = this.current(group, now);
    if (window) {
      window.failures++;
      return;
    }
    this.windows.delete(group);
    if (this.windows.size >= this.maxAddresses) this.evict(now);
    this.windows.set(group, { start, failures: 1 });
  }

  /** Addresses followed now (for tests of the bound). */
  get size(): number {
    return this.windows.size;
  }

  private current(group: string, now: number): Window | undefined {
    const window = this.windows.get(group);
    return window && window.start === Math.floor(now / WINDOW_MS) * WINDOW_MS ? window : undefined;
  }

  /**
   * Forgets past windows, else the address added first. An address is (re-)inserted when its window
   * starts, so the map is in the order of window starts: past windows are at its head.
   */
  private evict(now: number): void {
    const start = Math.floor(now / WINDOW_MS) * WINDOW_MS;
    for (const [group, window] of this.windows) {
      if (window.start === start) break;
      this.windows.delete(group);
    }
    if (this.windows.size >= this.maxAddresses) this.windows.delete(this.windows.keys().next().value!);
  }
}
