import { addressGroup, AuthFailureCounter } from './auth-failures';

describe('AuthFailureCounter', () => {
  const minute = 60_000 * 1000;

  it('blocks an address after `limit` failures until its minute ends', () => {
    const counter = new AuthFailureCounter(3);
    for (let i = 0; i < 3; i++) {
      expect(counter.blockedFor('10.0.0.1', minute + 1000)).toBeUndefined();
      counter.record('10.0.0.1', minute + 1000);
    }
    expect(counter.blockedFor('10.0.0.1', minute + 1000)).toBe(59);
    expect(counter.blockedFor('10.0.0.2', minute + 1000)).toBeUndefined();
    expect(counter.blockedFor('10.0.0.1', minute + 60_000)).toBeUndefined();
  });

  it('counts IPv6 addresses per /64 and IPv4-mapped addresses as IPv4', () => {
    expect(addressGroup('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:0db8:0001:0002:ffff:1:2:3')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressGroup('::1')).toBe('0:0:0:0::/64');
    expect(addressGroup('::ffff:127.0.0.1')).toBe('127.0.0.1');
    const counter = new AuthFailureCounter(2);
    counter.record('2001:db8:1:2::a', minute);
    counter.record('2001:db8:1:2::b', minute);
    expect(counter.blockedFor('2001:db8:1:2::c', minute)).toBeDefined();
  });

  it('follows a bounded number of addresses, forgetting past minutes first, then the oldest', () => {
    const counter = new AuthFailureCounter(1, 3);
    counter.record('10.0.0.1', minute);
    counter.record('10.0.0.2', minute + 60_000);
    counter.record('10.0.0.3', minute + 60_000);
    counter.record('10.0.0.4', minute + 60_000);
    expect(counter.size).toBe(3);
    expect(counter.blockedFor('10.0.0.2', minute + 60_000)).toBeDefined();
    counter.record('10.0.0.5', minute + 60_000);
    expect(counter.size).toBe(3);
    expect(counter.blockedFor('10.0.0.2', minute + 60_000)).toBeUndefined();
    expect(counter.blockedFor('10.0.0.5', minute + 60_000)).toBeDefined();
  });
});
