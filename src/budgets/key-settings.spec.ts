import { describe, expect, it } from 'vitest';
import {
  allowedCidrsProblem,
  cidrMatcher,
  creditsProblem,
  metadataProblem,
  nextRefill,
  parseCidr,
  rateLimitsProblem,
  refillPeriodStart,
} from './key-settings.js';

describe('key settings rules', () => {
  it('accept networks, bare addresses and the explicit everywhere, and refuse the rest naming the entry', () => {
    expect(
      allowedCidrsProblem(['203.0.113.0/24', '2001:db8::/32', '198.51.100.7', '::1', '0.0.0.0/0', '::/0']),
    ).toBeNull();
    expect(allowedCidrsProblem(['10.0.0.0/8', '10.0.0.1/8'])).toMatch(
      /^allowed_cidrs\[1\] has host bits set: write the network address \(for example 10\.0\.0\.0\/8\)/,
    );
    expect(allowedCidrsProblem(['1.0.0.0/7'])).toMatch(/^allowed_cidrs\[0\] is wider than \/8/);
    expect(allowedCidrsProblem(['2000::/15'])).toMatch(/wider than \/16/);
    expect(allowedCidrsProblem(['10.0.0.0/33'])).toMatch(/prefix length from 0 to 32/);
    expect(allowedCidrsProblem(['10.0.0.0/8/1'])).toMatch(/must be an IPv4 or IPv6 CIDR/);
    expect(allowedCidrsProblem([5])).toMatch(/^allowed_cidrs\[0\]/);
    for (const zoned of ['fe80::%eth0/64', 'fe80::1%eth0', 'fe80::%1/64', '10.0.0.0%x/8'])
      expect(allowedCidrsProblem([zoned]), zoned).toMatch(/^allowed_cidrs\[0\] must not carry a zone id/);
    expect(allowedCidrsProblem(Array(21).fill('10.0.0.0/8'))).toMatch(/at most 20/);
    expect(parseCidr('2001:db8:0:0::1/128')).toEqual({ address: '2001:db8:0:0::1', prefix: 128, family: 'ipv6' });
  });

  it('match client addresses, an IPv4 client seen through an IPv6 socket included', () => {
    const allows = cidrMatcher(['203.0.113.0/24', '2001:db8::/32']);
    expect(allows('203.0.113.9')).toBe(true);
    expect(allows('::ffff:203.0.113.9')).toBe(true);
    expect(allows('2001:db8::5')).toBe(true);
    expect(allows('198.51.100.1')).toBe(false);
    expect(allows('unknown')).toBe(false);
  });

  it('refuse windows, credits and metadata outside their rules', () => {
    expect(rateLimitsProblem([{ name: 'default', limit: 10, window_seconds: 1 }])).toBeNull();
    expect(rateLimitsProblem([{ name: 'default', limit: 1_000_000_000, window_seconds: 1 }])).toBeNull();
    // A limit no lease can carry (its share would overflow the lease statement for every key in the batch).
    expect(rateLimitsProblem([{ name: 'default', limit: 1_000_000_000_000, window_seconds: 1 }])).toBe(
      'rate_limits[0].limit must be an integer from 1 to 1000000000',
    );
    expect(
      rateLimitsProblem([
        { name: 'a', limit: 1, window_seconds: 1 },
        { name: 'a', limit: 2, window_seconds: 2 },
      ]),
    ).toMatch(/rate_limits\[1\]\.name must be unique/);
    expect(rateLimitsProblem([{ name: 'a', limit: 1, window_seconds: 1, burst: 3 }])).toBe(
      'rate_limits[0].burst is not an accepted field',
    );
    expect(creditsProblem({ remaining: 5, refill: { amount: 1, interval: 'daily', day_of_month: 3 } })).toMatch(
      /monthly refill only/,
    );
    expect(creditsProblem({ remaining: 5, refill: { amount: 0, interval: 'monthly' } })).toMatch(
      /credits\.refill\.amount/,
    );
    expect(metadataProblem({ a: { b: { c: { d: 1 } } } })).toBeNull();
    expect(metadataProblem({ a: { b: { c: { d: {} } } } })).toMatch(/at most 4 levels/);
    expect(metadataProblem({ s: 'é'.repeat(510) })).toMatch(/1024 bytes/);
  });

  it('refuse NUL characters and unpaired surrogates anywhere in metadata, keys and nested values included', () => {
    for (const bad of [
      { a: '\u0000' },
      { a: 'x\u0000y' },
      { 'k\u0000': 1 },
      { a: '\ud800' },
      { a: 'x\udc00' },
      { a: '\udc00\ud800' },
      { '\ud800': 'v' },
      { a: { b: ['ok', { c: 'z\u0000' }] } },
      { a: { '\udfff': true } },
    ])
      expect(metadataProblem(bad), JSON.stringify(bad)).toMatch(
        /^metadata must not contain NUL characters or unpaired surrogates/,
      );
    expect(metadataProblem({ emoji: '😀', ключ: 'é', nested: { list: ['\u0001', '\ud83d\ude00'] } })).toBeNull();
  });

  it('place refills at UTC midnights, a monthly one on its day or the last day of a shorter month', () => {
    const daily = { amount: 5, interval: 'daily' as const };
    expect(refillPeriodStart(daily, new Date('2026-03-05T13:00:00Z')).toISOString()).toBe('2026-03-05T00:00:00.000Z');
    expect(nextRefill(daily, new Date('2026-03-05T13:00:00Z')).toISOString()).toBe('2026-03-06T00:00:00.000Z');
    const monthly = { amount: 5, interval: 'monthly' as const, day_of_month: 31 };
    expect(refillPeriodStart(monthly, new Date('2026-03-05T00:00:00Z')).toISOString()).toBe('2026-02-28T00:00:00.000Z');
    expect(nextRefill(monthly, new Date('2026-03-05T00:00:00Z')).toISOString()).toBe('2026-03-31T00:00:00.000Z');
    expect(nextRefill({ amount: 1, interval: 'monthly' }, new Date('2026-12-15T00:00:00Z')).toISOString()).toBe(
      '2027-01-01T00:00:00.000Z',
    );
  });
});
