import { describe, expect, it } from 'vitest';
import { TestClock } from '../../test/support/clock.js';
import { epochMs } from '../common/clock.js';
import { sharedWindowCounter as sharedCounter } from '../../test/support/window-counter.js';
import type { KeyLimitStore } from './key-limit.store.js';
import { LEASE_SHARE, WindowLeases } from './window-leases.js';

const T0 = Date.parse('2031-06-01T12:00:00.000Z');

function instance(store: KeyLimitStore, clock: TestClock) {
  const leases = new WindowLeases(store, clock);
  const burst = (w: { name: string; limit: number; window_seconds: number }, n: number, key = 'k') =>
    Promise.all(Array.from({ length: n }, () => leases.take(key, w, 1, epochMs(clock))));
  return { leases, burst };
}

const admitted = (answers: number[]) => answers.filter((a) => a === 0).length;

describe('WindowLeases', () => {
  it('admits 5 of a burst of 12 on a window of 5 a second, and refuses the rest until enough is due', async () => {
    const clock = new TestClock(new Date(T0 + 100));
    const { store } = sharedCounter();
    const { burst } = instance(store, clock);
    const answers = await burst({ name: 'default', limit: 5, window_seconds: 1 }, 12);
    expect(admitted(answers)).toBe(5);
    // 5 counted in the window of 12:00:00: in the next one, that count weighs 5 * (1 - e) and
    // one request fits once it is 4, at 12:00:01.200: 1,100 ms after the burst.
    expect(answers.filter((a) => a !== 0)).toEqual(Array.from({ length: 7 }, () => 1100));
  });

  it('gives concurrent requests on three instances the whole window between them, never more', async () => {
    const clock = new TestClock(new Date(T0 + 300));
    const { store } = sharedCounter();
    const w = { name: 'default', limit: 10, window_seconds: 1 };
    const answers = await Promise.all([0, 1, 2].map(() => instance(store, clock).burst(w, 10)));
    expect(admitted(answers.flat())).toBe(10);
  });

  it('lets requests that arrive during a lease wait for it, and asks again for all who still wait', async () => {
    const clock = new TestClock(new Date(T0));
    const { store, wants } = sharedCounter();
    const { burst } = instance(store, clock);
    expect(admitted(await burst({ name: 'default', limit: 40, window_seconds: 1 }, 12))).toBe(12);
    // The first ask is the first request's; the next carries every request still waiting.
    expect(wants[0]).toBe(1);
    expect(wants[1]).toBe(11);
  });

  it('asks nothing for a refused request until enough is due, then asks again', async () => {
    const clock = new TestClock(new Date(T0 + 100));
    const { store, wants } = sharedCounter();
    const { leases, burst } = instance(store, clock);
    const w = { name: 'default', limit: 5, window_seconds: 1 };
    await burst(w, 6);
    const asked = wants.length;
    clock.set(new Date(T0 + 1199));
    expect(leases.take('k', w, 1, epochMs(clock))).toBe(1);
    expect(wants).toHaveLength(asked);
    clock.set(new Date(T0 + 1200));
    expect(await leases.take('k', w, 1, epochMs(clock))).toBe(0);
    expect(wants).toHaveLength(asked + 1);
  });

  it('weighs the previous window by how much of it the sliding window still covers', async () => {
    const clock = new TestClock(new Date(T0 + 900));
    const { store } = sharedCounter();
    const { burst } = instance(store, clock);
    const w = { name: 'default', limit: 10, window_seconds: 1 };
    expect(admitted(await burst(w, 10))).toBe(10);
    // 12:00:01.250: the 10 of the previous window weigh 7.5; 2 more fit.
    clock.set(new Date(T0 + 1250));
    expect(admitted(await burst(w, 10))).toBe(2);
    // 12:00:01.750: they weigh 2.5, and 2 were counted: 5 more fit.
    clock.set(new Date(T0 + 1750));
    expect(admitted(await burst(w, 10))).toBe(5);
  });

  it('spends a lease only in the fixed window it was granted in, and gives back only within it', async () => {
    // Before the window's last tenth: nothing is leased ahead (window-leases-ahead.spec.ts).
    const clock = new TestClock(new Date(T0 + 800));
    const { store, wants } = sharedCounter();
    const { leases } = instance(store, clock);
    const w = { name: 'default', limit: 1_000_000, window_seconds: 1 };
    expect(await leases.take('k', w, 1, epochMs(clock))).toBe(0);
    // A large limit leases LEASE_SHARE of it, spent synchronously from memory.
    expect(wants).toEqual([Math.ceil(1_000_000 * LEASE_SHARE)]);
    const takenAt = epochMs(clock);
    expect(leases.take('k', w, 1, takenAt)).toBe(0);
    clock.set(new Date(T0 + 1000));
    // The next window: the tokens left from the last one are not spent, a new lease is asked.
    const next = leases.take('k', w, 1, epochMs(clock));
    expect(next).toBeInstanceOf(Promise);
    expect(await next).toBe(0);
    expect(wants).toHaveLength(2);
    const before = leases.remaining('k', w, epochMs(clock));
    leases.giveBack('k', w, 1, takenAt);
    expect(leases.remaining('k', w, epochMs(clock))).toBe(before);
    leases.giveBack('k', w, 1, epochMs(clock));
    expect(leases.remaining('k', w, epochMs(clock))).toBe(before + 1);
  });

  it('says what remains and when the whole limit is back, from the counts of its last lease', async () => {
    const clock = new TestClock(new Date(T0 + 500));
    const { store } = sharedCounter();
    const { leases, burst } = instance(store, clock);
    const w = { name: 'default', limit: 10, window_seconds: 1 };
    expect(leases.remaining('k', w, epochMs(clock))).toBe(10);
    expect(leases.resetIn('k', w, epochMs(clock))).toBe(0);
    await burst(w, 4);
    expect(leases.remaining('k', w, epochMs(clock))).toBe(6);
    // The 4 weigh on the window until the end of the next fixed window.
    expect(leases.resetIn('k', w, epochMs(clock))).toBe(1500);
    expect(leases.remaining('k', w, T0 + 1500)).toBe(8);
  });

  it("reads another key's leases for it, and nothing of a key's dropped leases, after the last take", async () => {
    const clock = new TestClock(new Date(T0 + 500));
    const { store } = sharedCounter();
    const { leases, burst } = instance(store, clock);
    const w = { name: 'default', limit: 10, window_seconds: 1 };
    await burst(w, 3, 'a');
    await burst(w, 4, 'b');
    // 'b' was taken last: 'a' still answers with its own counts.
    expect(leases.remaining('a', w, epochMs(clock))).toBe(7);
    await leases.drop('b');
    expect(leases.remaining('b', w, epochMs(clock))).toBe(10);
    expect(leases.resetIn('b', w, epochMs(clock))).toBe(0);
  });

  it("takes a request's windows from the leases the key's last request with them used, until one is dropped", async () => {
    const clock = new TestClock(new Date(T0 + 500));
    const { store, wants } = sharedCounter();
    const { leases } = instance(store, clock);
    // Limits large enough for a lease to cover several requests.
    const windows = [
      { name: 'default', limit: 100_000, window_seconds: 1 },
      { name: 'burst', limit: 40_000, window_seconds: 1 },
    ];
    const takeAll = () => windows.map((_, i) => leases.takeAt('k', windows, i, 1, epochMs(clock)));
    expect(await Promise.all(takeAll())).toEqual([0, 0]);
    const asked = wants.length;
    // Covered by the leases: synchronous, no ask, each window its own lease (the RateLimit fields read the same).
    expect(takeAll()).toEqual([0, 0]);
    expect(wants.length).toBe(asked);
    expect(leases.remaining('k', windows[1], epochMs(clock), windows, 1)).toBe(40_000 - 2);
    expect(leases.remaining('k', windows[0], epochMs(clock), windows, 0)).toBe(100_000 - 2);
    // The same windows by name (another request's array) share the leases.
    expect(leases.take('k', { ...windows[1] }, 1, epochMs(clock))).toBe(0);
    expect(leases.remaining('k', windows[1], epochMs(clock), windows, 1)).toBe(40_000 - 3);
    // Dropped (the key changed): the remembered leases are not spent any more; the next request leases anew.
    await leases.drop('k');
    expect(leases.remaining('k', windows[1], epochMs(clock), windows, 1)).toBe(40_000);
    const again = takeAll();
    expect(again[0]).toBeInstanceOf(Promise);
    expect(await Promise.all(again)).toEqual([0, 0]);
    expect(wants.length).toBeGreaterThan(asked);
  });

  it('remembers the windows of a key for a route until its setting, its plan or the route changes', () => {
    const clock = new TestClock(new Date(T0));
    const { leases } = instance(sharedCounter().store, clock);
    const own = [{ name: 'default', limit: 10, window_seconds: 1 }];
    const built: string[] = [];
    const build = (o: unknown, p: unknown, route: string) => {
      built.push(route);
      return [{ name: route, limit: 1, window_seconds: 1 }];
    };
    const first = leases.windowsOf('k', own, null, 'default', build);
    expect(leases.windowsOf('k', own, null, 'default', build)).toBe(first);
    leases.windowsOf('k', own, null, 'search', build);
    leases.windowsOf('k', [...own], null, 'search', build);
    leases.windowsOf('k', [...own], [], 'search', build);
    leases.windowsOf('other', own, null, 'default', build);
    expect(built).toEqual(['default', 'search', 'search', 'search', 'default']);
  });

  describe('when the key changes', () => {
    const DAY = 86_400;
    const large = { name: 'default', limit: 100_000, window_seconds: DAY };
    const tight = { name: 'default', limit: 25, window_seconds: DAY };

    it('drops its leases and gives back what they held unspent: the count is what was spent', async () => {
      const clock = new TestClock(new Date(T0));
      const { store, rows } = sharedCounter();
      const [x, y] = [instance(store, clock), instance(store, clock)];
      expect(admitted([...(await x.burst(large, 12)), ...(await y.burst(large, 8))])).toBe(20);
      // Each instance leased a share of the limit, far beyond what it spent.
      expect(rows.get('k default')!.current).toBe(2 * Math.ceil(100_000 * LEASE_SHARE));
      await Promise.all([x.leases.drop('k'), y.leases.drop('k')]);
      expect(rows.get('k default')!.current).toBe(20);
      // 25 a day: 5 more, whichever instance they come to.
      expect(admitted([...(await x.burst(tight, 10)), ...(await y.burst(tight, 10))])).toBe(5);
    });

    it('never spends a lease taken under another setting of the window, and gives back what it held', async () => {
      const clock = new TestClock(new Date(T0));
      const { store, rows } = sharedCounter();
      const { leases, burst } = instance(store, clock);
      expect(admitted(await burst(large, 20))).toBe(20);
      // A request that comes with the new setting before the change was heard of.
      expect(admitted(await burst(tight, 30))).toBe(5);
      expect(rows.get('k default')!.current).toBe(25);
      // A token taken under the old setting and given back does not land in the new lease.
      const before = leases.remaining('k', tight, epochMs(clock));
      leases.giveBack('k', large, 1, epochMs(clock));
      expect(leases.remaining('k', tight, epochMs(clock))).toBe(before);
      expect(leases.take('k', tight, 1, epochMs(clock))).toBeGreaterThan(0);
    });

    it('gives back a dropped lease still being asked for once the requests waiting on it are done', async () => {
      const clock = new TestClock(new Date(T0));
      const { store, rows } = sharedCounter();
      const { leases } = instance(store, clock);
      const waiting = leases.take('k', large, 1, epochMs(clock));
      expect(waiting).toBeInstanceOf(Promise);
      expect(leases.drop('k')).toBeUndefined();
      expect(await waiting).toBe(0);
      await expect.poll(() => rows.get('k default')!.current).toBe(1);
    });
  });
});
