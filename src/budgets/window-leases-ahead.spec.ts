import { describe, expect, it } from 'vitest';
import { TestClock } from '../../test/support/clock.js';
import { sharedWindowCounter } from '../../test/support/window-counter.js';
import { epochMs } from '../common/clock.js';
import { LEASE_SHARE, WindowLeases } from './window-leases.js';

const T0 = Date.parse('2031-06-01T12:00:00.000Z');
const LARGE = { name: 'default', limit: 1_000_000, window_seconds: 10 };
const turn = () => new Promise((done) => setImmediate(done));

/** An instance whose key `k` holds a lease of `w`, taken at T0 + `at` ms. */
async function leased(
  w: typeof LARGE,
  at: number,
  rows?: Map<string, { start: number; previous: number; current: number }>,
) {
  const counter = sharedWindowCounter();
  for (const [k, row] of rows ?? []) counter.rows.set(k, row);
  const clock = new TestClock(new Date(T0 + at));
  const leases = new WindowLeases(counter.store, clock);
  expect(await leases.take('k', w, 1, epochMs(clock))).toBe(0);
  const take = (ms: number) => {
    clock.set(new Date(T0 + ms));
    return leases.take('k', w, 1, ms + T0);
  };
  return { ...counter, leases, take };
}

describe('WindowLeases, leasing ahead', () => {
  it('leases the next fixed window in the last second of a busy one, so the first request after the boundary takes from memory', async () => {
    const { take, nows, rows } = await leased(LARGE, 5_000);
    // Not before the window's last second (at most a tenth of it).
    expect(take(8_900)).toBe(0);
    await turn();
    expect(nows).toEqual([T0 + 5_000]);
    expect(take(9_100)).toBe(0);
    await turn();
    // One ask, for the next window's start, counted in it.
    expect(nows).toEqual([T0 + 5_000, T0 + 10_000]);
    expect(rows.get('k default')).toMatchObject({ start: T0 + 10_000, current: Math.ceil(LARGE.limit * LEASE_SHARE) });
    expect(take(9_500)).toBe(0);
    await turn();
    expect(nows).toHaveLength(2);
    // Synchronously after the boundary, without another ask.
    expect(take(10_000)).toBe(0);
    expect(take(10_001)).toBe(0);
    await turn();
    expect(nows).toHaveLength(2);
  });

  it('leases nothing ahead for a window half spent, or whose lease is a large share of its limit', async () => {
    const half = new Map([['k default', { start: T0, previous: 0, current: 600_000 }]]);
    const spent = await leased(LARGE, 5_000, half);
    expect(spent.take(9_500)).toBe(0);
    await turn();
    expect(spent.nows).toEqual([T0 + 5_000]);
    expect(spent.take(10_000)).toBeInstanceOf(Promise);

    const small = await leased({ name: 'default', limit: 10, window_seconds: 10 }, 5_000);
    await small.take(9_500);
    await turn();
    expect(small.nows.every((t) => t < T0 + 10_000)).toBe(true);
  });

  it('spends tokens leased ahead only in the window they were leased for', async () => {
    const { take, nows } = await leased(LARGE, 5_000);
    expect(take(9_500)).toBe(0);
    await turn();
    // A key idle for more than a window: the tokens ended unspent, a new lease is asked.
    const later = take(20_500);
    expect(later).toBeInstanceOf(Promise);
    expect(await later).toBe(0);
    expect(nows).toEqual([T0 + 5_000, T0 + 10_000, T0 + 20_500]);
  });

  it('gives back what it leased ahead when the key changes before the boundary', async () => {
    const { take, leases, rows } = await leased(LARGE, 5_000);
    expect(take(9_500)).toBe(0);
    await turn();
    expect(rows.get('k default')!.current).toBeGreaterThan(0);
    await leases.drop('k');
    expect(rows.get('k default')).toMatchObject({ start: T0 + 10_000, current: 0 });
  });

  it('gives back a lease ahead that comes back after the key changed', async () => {
    const { take, leases, rows } = await leased(LARGE, 5_000);
    expect(take(9_500)).toBe(0);
    // Dropped while the ask ahead is under way.
    await leases.drop('k');
    await turn();
    await turn();
    expect(rows.get('k default')).toMatchObject({ start: T0 + 10_000, current: 0 });
  });
});
