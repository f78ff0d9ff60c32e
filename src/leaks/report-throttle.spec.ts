import { describe, expect, it } from 'vitest';
import { ReportThrottle } from './report-throttle.js';

describe('ReportThrottle', () => {
  it('lets the limit through per address in a minute, then says how many seconds to wait', async () => {
    const throttle = new ReportThrottle(2);
    expect(await throttle.take('198.51.100.7')).toBe(0);
    expect(await throttle.take('198.51.100.7')).toBe(0);
    const wait = await throttle.take('198.51.100.7');
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    expect(await throttle.take('198.51.100.8'), 'another address has its own count').toBe(0);
  });

  it('counts an IPv6 client by its /64 and an IPv4-mapped address as its IPv4 address', async () => {
    const throttle = new ReportThrottle(1);
    expect(await throttle.take('2001:db8:1:2::1')).toBe(0);
    expect(await throttle.take('2001:db8:1:2:ffff::9')).toBeGreaterThan(0);
    expect(await throttle.take('203.0.113.5')).toBe(0);
    expect(await throttle.take('::ffff:203.0.113.5')).toBeGreaterThan(0);
  });

  it('is off at 0', async () => {
    const throttle = new ReportThrottle(0);
    for (let i = 0; i < 100; i++) expect(await throttle.take('198.51.100.7')).toBe(0);
  });
});
