import { describe, expect, it } from 'vitest';
import { Settings } from '../settings/settings.js';
import { TestClock } from '../../test/support/clock.js';
import { AuthFailureThrottle, throttledUnit } from './auth-failure-throttle.js';

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

describe('AuthFailureThrottle (in memory)', () => {
  const settings = (limit: number) =>
    new Settings({
      session: { secret: 'unit-test-session-secret-0123456789abcdef' },
      authFailureLimit: limit,
      clock: new TestClock('2030-01-01T00:00:00Z'),
    });

  it('counts each attempt as it arrives, so of 100 concurrent attempts at most the limit are admitted', async () => {
    const throttle = new AuthFailureThrottle(settings(7));
    const admissions = await Promise.all(
      Array.from({ length: 100 }, (_, i) => throttle.admit('203.0.113.1', `bad-${i}`)),
    );
    expect(admissions.filter((a) => a.retryAfter === 0)).toHaveLength(7);
    expect(admissions.filter((a) => a.retryAfter > 0).every((a) => a.retryAfter === 60)).toBe(true);
  });

  it('gives a reservation back on success and trusts that credential from that address while it is throttled', async () => {
    const throttle = new AuthFailureThrottle(settings(2));
    (await throttle.admit('203.0.113.2', 'good')).succeeded();
    for (let i = 0; i < 2; i++) (await throttle.admit('203.0.113.2', `bad-${i}`)).failed();
    expect((await throttle.admit('203.0.113.2', 'bad-3')).retryAfter).toBe(60);
    expect((await throttle.admit('203.0.113.2', 'good')).retryAfter).toBe(0);
    expect((await throttle.admit('203.0.113.3', 'other')).retryAfter).toBe(0);
  });

  it('admits everything when the limit is 0', async () => {
    const throttle = new AuthFailureThrottle(settings(0));
    for (let i = 0; i < 5; i++) (await throttle.admit('203.0.113.4', 'bad')).failed();
    expect((await throttle.admit('203.0.113.4', 'bad')).retryAfter).toBe(0);
  });
});
