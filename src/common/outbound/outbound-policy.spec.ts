import { ipLiteral, OutboundPolicy } from './outbound-policy';
import { OutboundError } from './outbound.types';

const strict = new OutboundPolicy();

function failureOf(action: () => unknown): string | undefined {
  try {
    action();
    return undefined;
  } catch (error) {
    return error instanceof OutboundError ? error.failure : 'not an OutboundError';
  }
}

/** What a URL's host comes to under a policy: the URL check first, then the host or address. */
function judgeUrl(policy: OutboundPolicy, url: string): string {
  try {
    return policy.judgeHost(policy.parseUrl(url).hostname);
  } catch (error) {
    return error instanceof OutboundError ? error.failure : 'not an OutboundError';
  }
}

describe('OutboundPolicy.allowsAddress, no allow-list', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'this network'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['::1', 'IPv6 loopback'],
    ['::', 'IPv6 unspecified'],
    ['fe80::1', 'IPv6 link-local'],
    ['fe80::1%eth0', 'IPv6 link-local with a zone'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['ff02::1', 'IPv6 multicast'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::ffff:169.254.169.254', 'IPv4-mapped link-local'],
    ['::127.0.0.1', 'IPv4-compatible (deprecated)'],
    ['64:ff9b::7f00:1', 'NAT64 (RFC 6052) of loopback'],
    ['64:ff9b::a00:1', 'NAT64 of a private address'],
    ['::ffff:0:7f00:1', 'RFC 6145 translated loopback'],
    ['2002:7f00:1::', '6to4 of loopback'],
    ['2002:a00:1::', '6to4 of a private address'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
    ['2001:db8::1', 'documentation'],
    ['fec0::1', 'site-local (deprecated)'],
    ['100::1', 'discard'],
    ['2130706433', 'decimal loopback'],
    ['0x7f000001', 'hex loopback'],
    ['127.1', 'short loopback'],
    ['017700000001', 'octal loopback'],
    ['not an address', 'not an address'],
    ['', 'empty'],
    ['[::1]', 'bracketed loopback'],
  ])('refuses %s (%s)', (ip) => {
    expect(strict.allowsAddress(ip)).toBe(false);
  });

  it.each([
    ['8.8.8.8'],
    ['1.1.1.1'],
    ['93.184.215.14'],
    ['2606:4700::1111'],
    ['2a00:1450:4001:82a::200e'],
    ['::ffff:8.8.8.8'],
  ])('allows the public address %s', (ip) => {
    expect(strict.allowsAddress(ip)).toBe(true);
  });
});

describe('OutboundPolicy allow-list', () => {
  const policy = OutboundPolicy.fromSetting('127.0.0.1,10.0.0.0/8,fd00::/8,[::1],Echo.Internal');

  it.each([
    ['127.0.0.1', true],
    ['::ffff:127.0.0.1', true], // the same address, mapped
    ['127.0.0.2', false],
    ['10.1.2.3', true],
    ['::ffff:10.1.2.3', true],
    ['11.0.0.1', true], // public anyway
    ['172.16.0.1', false],
    ['fd12::1', true],
    ['fc00::1', false],
    ['::1', true],
    ['fe80::1', false],
    ['8.8.8.8', true],
  ])('%s: %s', (ip, allowed) => {
    expect(policy.allowsAddress(ip)).toBe(allowed);
  });

  it('allows a listed host name, case-insensitively and exactly', () => {
    expect(policy.allowsHost('echo.internal')).toBe(true);
    expect(policy.allowsHost('ECHO.INTERNAL')).toBe(true);
    expect(policy.allowsHost('x.echo.internal')).toBe(false);
    expect(policy.allowsHost('echo.internal.evil.com')).toBe(false);
    expect(policy.allowsHost('echo')).toBe(false);
    expect(strict.allowsHost('echo.internal')).toBe(false);
  });

  it('does not take a listed address for a host name, nor a name for an address', () => {
    expect(policy.allowsHost('127.0.0.1')).toBe(false);
    expect(policy.allowsAddress('echo.internal')).toBe(false);
  });

  it('reads an IPv6 CIDR, a bracketed one and a v4 one with a host part', () => {
    const ranges = OutboundPolicy.fromSetting('[fe80::]/10, 192.168.1.7/24 ,');
    expect(ranges.allowsAddress('fe80::abcd')).toBe(true);
    expect(ranges.allowsAddress('192.168.1.200')).toBe(true);
    expect(ranges.allowsAddress('192.168.2.1')).toBe(false);
  });

  it('reads an IPv4-mapped entry as the IPv4 address or range it maps', () => {
    const mapped = OutboundPolicy.fromSetting('::ffff:127.0.0.1,::ffff:10.0.0.0/104');
    expect(mapped.allowsAddress('127.0.0.1')).toBe(true);
    expect(mapped.allowsAddress('::ffff:127.0.0.1')).toBe(true);
    expect(mapped.allowsAddress('10.9.9.9')).toBe(true);
    expect(mapped.allowsAddress('11.0.0.0')).toBe(true); // public
    expect(mapped.allowsAddress('172.16.0.1')).toBe(false);
  });

  it('refuses a malformed range at start, naming the setting', () => {
    expect(() => OutboundPolicy.fromSetting('10.0.0.0/33')).toThrow(/OUTBOUND_ALLOWED_HOSTS/);
    expect(() => OutboundPolicy.fromSetting('example.com/8')).toThrow(/OUTBOUND_ALLOWED_HOSTS/);
  });
});

describe('OutboundPolicy URL checks', () => {
  it.each([
    ['ftp://example.com/'],
    ['file:///etc/passwd'],
    ['gopher://example.com/'],
    ['javascript:alert(1)'],
    ['data:text/plain,hi'],
    ['http://user:pass@example.com/'],
    ['http://user@example.com/'],
    ['https://:secret@example.com/'],
    ['/relative/path'],
    ['example.com'],
    ['http://'],
    ['http://[::1/'],
    [''],
  ])('%s is an invalid_url', (url) => {
    expect(failureOf(() => strict.parseUrl(url))).toBe('invalid_url');
  });

  it.each([['http://example.com/a?b=c'], ['https://EXAMPLE.com:8443/'], ['http://8.8.8.8/']])(
    '%s is a URL the policy reads',
    (url) => {
      expect(strict.parseUrl(url)).toBeInstanceOf(URL);
    },
  );

  // WHATWG URL parsing turns several of these into 127.0.0.1 or an IPv6 literal; every form must be
  // judged as the address it is, never as a name.
  it.each([
    ['http://127.0.0.1/'],
    ['http://127.0.0.1:8080/x'],
    ['http://0x7f000001/'],
    ['http://0x7f.0.0.1/'],
    ['http://2130706433/'],
    ['http://017700000001/'],
    ['http://0177.0.0.1/'],
    ['http://127.1/'],
    ['http://127.0.1/'],
    ['http://0/'],
    ['http://0.0.0.0/'],
    ['http://[::1]/'],
    ['http://[::]/'],
    ['http://[::ffff:127.0.0.1]/'],
    ['http://[::ffff:7f00:1]/'],
    ['http://[0:0:0:0:0:ffff:127.0.0.1]/'],
    ['http://[64:ff9b::127.0.0.1]/'],
    ['http://[2002:7f00:1::]/'],
    ['http://[fe80::1]/'],
    ['http://[fc00::1]/'],
    ['http://[ff02::1]/'],
    ['http://10.0.0.1/'],
    ['http://172.16.0.1/'],
    ['http://192.168.0.1/'],
    ['http://169.254.169.254/latest/meta-data/'],
    ['http://100.64.0.1/'],
    ['http://224.0.0.1/'],
    ['http://255.255.255.255/'],
    ['https://0xa9fea9fe/'],
  ])('%s is refused without resolving anything', (url) => {
    expect(judgeUrl(strict, url)).toBe('refused');
  });

  it.each([
    ['http://8.8.8.8/', 'allowed'],
    ['http://0x08080808/', 'allowed'],
    ['http://[2606:4700::1111]/', 'allowed'],
    ['http://example.com/', 'resolve'],
    ['http://localhost/', 'resolve'], // a name: its addresses decide (and 127.0.0.1 will not pass)
  ])('%s: %s', (url, verdict) => {
    expect(judgeUrl(strict, url)).toBe(verdict);
  });

  it('lets listed hosts and addresses through', () => {
    const policy = OutboundPolicy.fromSetting('127.0.0.0/8,::1,localhost');
    expect(judgeUrl(policy, 'http://127.0.0.1:3000/')).toBe('allowed');
    expect(judgeUrl(policy, 'http://2130706433/')).toBe('allowed');
    expect(judgeUrl(policy, 'http://[::ffff:127.0.0.1]/')).toBe('allowed');
    expect(judgeUrl(policy, 'http://[::1]/')).toBe('allowed');
    expect(judgeUrl(policy, 'http://LOCALHOST/')).toBe('allowed');
    expect(judgeUrl(policy, 'http://10.0.0.1/')).toBe('refused');
  });

  it('says what a literal is', () => {
    expect(ipLiteral('[::1]')).toBe('::1');
    expect(ipLiteral('127.0.0.1')).toBe('127.0.0.1');
    expect(ipLiteral('2130706433')).toBe('2130706433');
    expect(ipLiteral('example.com')).toBeUndefined();
  });
});
