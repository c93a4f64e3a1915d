import * as ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Range = [Address, number];

/**
 * An address in one form: IPv4 in four decimal parts, or IPv6 (an IPv4-mapped IPv6 address as the IPv4
 * address it maps); undefined for anything else (ipaddr.js's other IPv4 forms, `0x7f.1`, `2130706433`, are
 * not what a proxy writes, and are refused rather than read).
 */
export function parseAddress(text: string): Address | undefined {
  const bare = text.trim();
  if (!ipaddr.IPv4.isValidFourPartDecimal(bare) && !ipaddr.IPv6.isValid(bare)) return undefined;
  const address = ipaddr.parse(bare);
  return address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress() ? address.toIPv4Address() : address;
}

/** A TRUST_PROXY entry as a range (an address is a range of one), or undefined when it is neither. */
function parseEntry(entry: string): Range | undefined {
  const slash = entry.indexOf('/');
  if (slash < 0) {
    const address = parseAddress(entry);
    return address && [address, address.kind() === 'ipv4' ? 32 : 128];
  }
  const address = entry.slice(0, slash);
  const prefix = entry.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefix)) return undefined;
  if (!ipaddr.IPv4.isValidFourPartDecimal(address) && !ipaddr.IPv6.isValid(address)) return undefined;
  if (!ipaddr.isValidCIDR(`${address}/${prefix}`)) return undefined;
  const [network, bits] = ipaddr.parseCIDR(`${address}/${prefix}`);
  // A range of IPv4-mapped IPv6 addresses is the IPv4 range it maps (addresses are compared unmapped).
  return network instanceof ipaddr.IPv6 && network.isIPv4MappedAddress() && bits >= 96
    ? [network.toIPv4Address(), bits - 96]
    : [network, bits];
}

export const TRUST_PROXY_FORMAT =
  'TRUST_PROXY must be a comma-separated list of IP addresses or CIDR blocks such as 127.0.0.1,10.0.0.0/8';

/** The entries of a TRUST_PROXY value that are not an address or a CIDR block (none: a valid value). */
export function invalidTrustProxyEntries(setting: string): string[] {
  return setting
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry === '' || parseEntry(entry) === undefined);
}

/**
 * The proxies (TRUST_PROXY: addresses and CIDR blocks) whose `X-Forwarded-For` the service believes.
 * Empty: none, and the client is always the connection's peer.
 */
/** Peers remembered by `clientOf`; the memory is emptied when full (a peer is parsed again, no more). */
const REMEMBERED_PEERS = 10_000;

export class TrustedProxies {
  /**
   * The client of each peer that is not a trusted proxy (the answer then depends on the peer alone): a
   * peer sends request after request on its connection, and parsing its address each time was 4% of the
   * CPU of a cheap read (`::ffff:127.0.0.1` fails ipaddr.js's IPv4 check by an exception first).
   */
  private readonly untrustedPeers = new Map<string, string>();

  private constructor(private readonly ranges: readonly Range[]) {}

  /** From the setting (comma-separated; unset: none). A malformed entry throws, naming TRUST_PROXY. */
  static fromSetting(setting: string | undefined): TrustedProxies {
    if (setting === undefined || setting.trim() === '') return new TrustedProxies([]);
    if (invalidTrustProxyEntries(setting).length) throw new Error(TRUST_PROXY_FORMAT);
    return new TrustedProxies(setting.split(',').map((entry) => parseEntry(entry.trim())!));
  }

  get none(): boolean {
    return this.ranges.length === 0;
  }

  /** Whether the address is one of the trusted proxies. */
  trusts(address: Address): boolean {
    return this.ranges.some(
      ([network, bits]) => network.kind() === address.kind() && address.match(network, bits),
    );
  }

  /**
   * The client of a request: the connection's peer when it is not a trusted proxy (its `X-Forwarded-For`
   * is then ignored: anyone can write one); else the rightmost address of `X-Forwarded-For` that is not a
   * trusted proxy. Each proxy appends the address it was connected from, so the entries right of the client
   * were written by trusted proxies and everything left of it by the client itself: never believed. When
   * every hop is trusted, the leftmost; an entry that is not an address stops the walk at the trusted hop
   * that handed it over. Addresses come out in one form (`::ffff:10.0.0.1` is `10.0.0.1`).
   */
  clientOf(peer: string | undefined, forwardedFor: string | string[] | undefined): string {
    const remembered = peer === undefined ? undefined : this.untrustedPeers.get(peer);
    if (remembered !== undefined) return remembered;
    const from = peer === undefined ? undefined : parseAddress(peer);
    if (from === undefined) return peer ?? 'unknown';
    if (!this.trusts(from)) {
      if (this.untrustedPeers.size >= REMEMBERED_PEERS) this.untrustedPeers.clear();
      const client = from.toString();
      this.untrustedPeers.set(peer!, client);
      return client;
    }
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : (forwardedFor ?? ''))
      .split(',')
      .map((hop) => hop.trim())
      .filter((hop) => hop !== '');
    let client = from;
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = parseAddress(hops[i]);
      if (hop === undefined) break;
      client = hop;
      if (!this.trusts(hop)) break;
    }
    return client.toString();
  }
}
