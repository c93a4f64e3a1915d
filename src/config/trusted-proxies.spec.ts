import { TrustedProxies } from './trusted-proxies';

describe('TrustedProxies', () => {
  const balancer = TrustedProxies.fromSetting('127.0.0.1,10.0.0.0/8');

  it('trusts nobody when unset: the client is the peer, whatever it forwards', () => {
    const none = TrustedProxies.fromSetting(undefined);
    expect(none.none).toBe(true);
    expect(none.clientOf('127.0.0.1', '203.0.113.7')).toBe('127.0.0.1');
    expect(TrustedProxies.fromSetting('').clientOf('::ffff:127.0.0.1', '203.0.113.7')).toBe('127.0.0.1');
  });

  it('ignores X-Forwarded-For from a peer that is not trusted', () => {
    expect(balancer.clientOf('198.51.100.9', '203.0.113.7')).toBe('198.51.100.9');
    expect(balancer.clientOf('198.51.100.9', '10.0.0.1, 127.0.0.1')).toBe('198.51.100.9');
  });

  it('takes the rightmost untrusted address of the chain behind a trusted peer', () => {
    expect(balancer.clientOf('127.0.0.1', '203.0.113.7')).toBe('203.0.113.7');
    expect(balancer.clientOf('::ffff:127.0.0.1', '203.0.113.7')).toBe('203.0.113.7');
    // The client wrote the leftmost entry itself; the balancer appended the address it came from.
    expect(balancer.clientOf('127.0.0.1', '192.0.2.1, 203.0.113.7')).toBe('203.0.113.7');
    // Two trusted hops: the first balancer's peer is the client.
    expect(balancer.clientOf('127.0.0.1', '192.0.2.1, 203.0.113.7, 10.1.2.3')).toBe('203.0.113.7');
    // Repeated headers are one list.
    expect(balancer.clientOf('127.0.0.1', ['192.0.2.1', '203.0.113.7'])).toBe('203.0.113.7');
    expect(balancer.clientOf('127.0.0.1', '2001:DB8::1')).toBe('2001:db8::1');
  });

  it('takes the leftmost when every hop is trusted, and stops at an entry that is no address', () => {
    expect(balancer.clientOf('127.0.0.1', undefined)).toBe('127.0.0.1');
    expect(balancer.clientOf('127.0.0.1', '10.0.0.5')).toBe('10.0.0.5');
    expect(balancer.clientOf('127.0.0.1', 'not-an-address, 10.0.0.5')).toBe('10.0.0.5');
    expect(balancer.clientOf('127.0.0.1', '203.0.113.7:443')).toBe('127.0.0.1');
  });

  it('matches IPv6 ranges and IPv4-mapped entries as IPv4', () => {
    const six = TrustedProxies.fromSetting('fd00::/8, ::ffff:192.168.0.0/112');
    expect(six.clientOf('fd00::1', '2001:db8::5')).toBe('2001:db8::5');
    expect(six.clientOf('192.168.3.4', '203.0.113.7')).toBe('203.0.113.7');
    expect(six.clientOf('192.169.0.1', '203.0.113.7')).toBe('192.169.0.1');
  });

  it('remembers untrusted peers only: a trusted peer is still read with what it forwards, every time', () => {
    const proxies = TrustedProxies.fromSetting('127.0.0.1');
    for (let round = 0; round < 2; round++) {
      expect(proxies.clientOf('::ffff:198.51.100.9', '203.0.113.7')).toBe('198.51.100.9');
      expect(proxies.clientOf('127.0.0.1', '203.0.113.7')).toBe('203.0.113.7');
      expect(proxies.clientOf('127.0.0.1', '192.0.2.1')).toBe('192.0.2.1');
      expect(proxies.clientOf('not-an-address', '192.0.2.1')).toBe('not-an-address');
    }
  });

  it('keeps answering right past the number of peers it remembers', () => {
    const none = TrustedProxies.fromSetting(undefined);
    for (let i = 0; i < 10_050; i++) {
      const peer = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
      expect(none.clientOf(`::ffff:${peer}`, undefined)).toBe(peer);
    }
    expect(none.clientOf('::ffff:10.0.0.0', undefined)).toBe('10.0.0.0');
  });

  it('refuses a malformed setting, naming TRUST_PROXY', () => {
    expect(() => TrustedProxies.fromSetting('127.0.0.1,proxy.local')).toThrow(/TRUST_PROXY/);
  });
});
