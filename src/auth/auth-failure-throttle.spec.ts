import { describe, expect, it } from 'vitest';
import { throttledUnit } from './auth-failure-throttle.js';

describe('the unit a client address is throttled as', () => {
  it('is the address itself for IPv4', () => {
    expect(throttledUnit('203.0.113.7')).toBe('203.0.113.7');
  });

  it('is the IPv4 address for an IPv4-mapped IPv6 address', () => {
    expect(throttledUnit('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(throttledUnit('::FFFF:203.0.113.7')).toBe('203.0.113.7');
  });

  it('is the /64 network for IPv6, however the address is written', () => {
    const unit = '2001:db8:1:2::/64';
    expect(throttledUnit('2001:db8:1:2::1')).toBe(unit);
    expect(throttledUnit('2001:0db8:0001:0002:ffff:ffff:ffff:ffff')).toBe(unit);
    expect(throttledUnit('2001:DB8:1:2:0:0:0:9')).toBe(unit);
    expect(throttledUnit('2001:db8:1:2::1%eth0')).toBe(unit);
    expect(throttledUnit('2001:db8:1:3::1')).not.toBe(unit);
    expect(throttledUnit('::1')).toBe('0:0:0:0::/64');
    expect(throttledUnit('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64');
  });

  it('passes anything that is not an IP address through unchanged', () => {
    expect(throttledUnit('unknown')).toBe('unknown');
  });
});
