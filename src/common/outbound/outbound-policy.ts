import * as ipaddr from 'ipaddr.js';
import { OutboundError } from './outbound.types';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** Global unicast space (RFC 4291 2.4): an IPv6 address outside it is never a public destination. */
const IPV6_GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

/** `[::1]` (a URL's host) and `::1` are the same address. */
function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * The address a host is, when it is an IP literal (as a URL's `hostname`, brackets allowed), else
 * undefined (a name to resolve). Every form ipaddr.js reads counts as a literal, the numeric ones
 * (`2130706433`, `0x7f.1`) included, so that no form is taken for a name.
 */
export function ipLiteral(host: string): string | undefined {
  const bare = unbracket(host);
  return ipaddr.isValid(bare) ? bare : undefined;
}

function parseAddress(ip: string): Address | undefined {
  try {
    return ipaddr.parse(unbracket(ip));
  } catch {
    return undefined;
  }
}

/** A range of IPv4-mapped IPv6 addresses as the IPv4 range it maps (addresses are judged unmapped). */
function unmapped([network, prefix]: [Address, number]): [Address, number] {
  return network instanceof ipaddr.IPv6 && network.isIPv4MappedAddress() && prefix >= 96
    ? [network.toIPv4Address(), prefix - 96]
    : [network, prefix];
}

/** Public unicast and nothing else: every special range ipaddr.js knows is refused, embeddings included. */
function isPublic(address: Address): boolean {
  if (address.range() !== 'unicast') return false;
  return address.kind() === 'ipv4' || address.match(IPV6_GLOBAL_UNICAST);
}

/**
 * Which destinations the service may send to (the outbound policy), built from
 * OUTBOUND_ALLOWED_HOSTS. Pure: it resolves nothing; the caller checks every address a name resolves
 * to and the address it actually connected to.
 */
export class OutboundPolicy {
  private readonly ranges: [Address, number][] = [];
  private readonly hosts = new Set<string>();

  /** `entries`: host names, IP addresses or CIDR ranges; a malformed address or range throws. */
  constructor(entries: readonly string[] = []) {
    for (const raw of entries) {
      const entry = raw.trim();
      if (entry === '') continue;
      if (entry.includes('/')) {
        const [address, prefix] = entry.split('/', 2);
        const cidr = `${unbracket(address)}/${prefix}`;
        if (!ipaddr.isValidCIDR(cidr)) {
          throw new Error(`OUTBOUND_ALLOWED_HOSTS: ${entry} is not a valid CIDR range`);
        }
        this.ranges.push(unmapped(ipaddr.parseCIDR(cidr)));
      } else if (ipLiteral(entry) !== undefined) {
        const address = ipaddr.parse(unbracket(entry));
        this.ranges.push(unmapped([address, address.kind() === 'ipv4' ? 32 : 128]));
      } else {
        this.hosts.add(entry.toLowerCase());
      }
    }
  }

  /** From the OUTBOUND_ALLOWED_HOSTS setting (comma-separated; unset: nothing beyond public addresses). */
  static fromSetting(setting: string | undefined): OutboundPolicy {
    return new OutboundPolicy(setting === undefined ? [] : setting.split(','));
  }

  /**
   * Whether the service may connect to this address: a public unicast address, or one inside a listed
   * address or range. An IPv4-mapped IPv6 address is judged as the IPv4 address it maps.
   * Anything that is not an address is refused.
   */
  allowsAddress(ip: string): boolean {
    const parsed = parseAddress(ip);
    if (parsed === undefined) return false;
    const address =
      parsed instanceof ipaddr.IPv6 && parsed.isIPv4MappedAddress() ? parsed.toIPv4Address() : parsed;
    if (this.listed(address) || this.listed(parsed)) return true;
    return isPublic(address);
  }

  /** Whether this host name is listed (case-insensitive, exact): any address it resolves to is then allowed. */
  allowsHost(hostname: string): boolean {
    return this.hosts.has(hostname.toLowerCase());
  }

  /**
   * The URL, when it is an absolute http or https URL with a host and no credentials; otherwise an
   * OutboundError('invalid_url'). Says nothing yet of the address.
   */
  parseUrl(url: string): URL {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new OutboundError('invalid_url', 'the destination must be an absolute http or https URL');
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new OutboundError('invalid_url', 'the destination must be an http or https URL');
    }
    if (parsed.username !== '' || parsed.password !== '') {
      throw new OutboundError('invalid_url', 'the destination URL must not carry credentials');
    }
    if (parsed.hostname === '') {
      throw new OutboundError('invalid_url', 'the destination URL has no host');
    }
    return parsed;
  }

  /**
   * Whether a URL's host passes without resolving it: refused when it is an IP literal the policy
   * refuses; `'resolve'` when it is a name that is not listed (its addresses decide).
   */
  judgeHost(hostname: string): 'allowed' | 'refused' | 'resolve' {
    const literal = ipLiteral(hostname);
    if (literal !== undefined) return this.allowsAddress(literal) ? 'allowed' : 'refused';
    return this.allowsHost(hostname) ? 'allowed' : 'resolve';
  }

  private listed(address: Address): boolean {
    return this.ranges.some(
      ([network, prefix]) => network.kind() === address.kind() && address.match(network, prefix),
    );
  }
}
