import { afterEach, describe, expect, it, vi } from 'vitest';
import { PeriodicJobs } from '../common/periodic-jobs.js';
import type { BlockAsk, BlockGrant, BlockReturn, MeterBlockStore } from './meter-block-store.js';
import { METER_LEASE_TTL_MS, OrgMeterLeases } from './org-meter-leases.js';

const DAY = '2031-03-14';

/**
 * One limit's room shared by whoever asks, as kui_lease_meters grants it (the statement itself is
 * tested on PostgreSQL): at least the cost, what is wanted and an eighth of the room, never past it.
 */
function sharedRoom(room: number, options: { rowWhenEmpty?: boolean } = {}) {
  const asks: BlockAsk[] = [];
  const returned: BlockReturn[] = [];
  let left = room;
  let down = false;
  const repository = {
    lease: async (ask: BlockAsk): Promise<BlockGrant> => {
      asks.push(ask);
      await Promise.resolve();
      if (down) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      const granted =
        ask.cost > 0 && left >= ask.cost ? Math.min(left, Math.max(ask.cost, ask.want, Math.ceil(left / 8))) : 0;
      left -= granted;
      // An instance that was never granted anything has no block row: not live.
      return { granted, live: granted > 0 || options.rowWhenEmpty !== false, counted: 0, held: room - left };
    },
    giveBack: async (blocks: BlockReturn[]) => {
      returned.push(...blocks);
      for (const b of blocks) left += b.count;
    },
  } as unknown as MeterBlockStore;
  return {
    leases: new OrgMeterLeases(repository, new PeriodicJobs()),
    asks,
    returned,
    left: () => left,
    databaseDown: () => (down = true),
  };
}

describe('OrgMeterLeases', () => {
  afterEach(() => vi.restoreAllMocks());

  it('asks PostgreSQL once for a block, then takes from it synchronously: no promise while it has room', async () => {
    const { leases, asks } = sharedRoom(100);

    expect(await leases.take('org', DAY, 'wallet', 100, 5)).toBe(true); // a block of 13
    const next = leases.take('org', DAY, 'wallet', 100, 1);

    expect(next).toBe(true);
    expect(asks).toHaveLength(1);
    expect(asks[0]).toMatchObject({ orgId: 'org', day: DAY, meter: 'wallet', limit: 100, cost: 5 });
  });

  it('makes requests that arrive while a block is asked for wait for it, then asks once for all of them', async () => {
    const { leases, asks } = sharedRoom(10);

    const answers = await Promise.all(Array.from({ length: 12 }, () => leases.take('org', DAY, 'wallet', 10, 1)));

    expect(answers.filter((a) => a)).toHaveLength(10);
    // The first ask for the first request (a block of 2); the next for the 10 still waiting; the last finds no room.
    expect(asks.map((a) => a.want)).toEqual([1, 10, 2]);
  });

  it('pays a cost with what its block holds and what the limit has left together', async () => {
    const { leases, asks } = sharedRoom(15);
    expect(await leases.take('org', DAY, 'captures', 15, 3)).toBe(true); // a block of 3
    expect(await leases.take('org', DAY, 'captures', 15, 2)).toBe(true); // 2 more leased, 0 held
    leases.giveBack('org', DAY, 'captures', 2); // a refund: 2 held again

    expect(await leases.take('org', DAY, 'captures', 15, 12)).toBe(true);
    expect(asks.at(-1)).toMatchObject({ cost: 10 });
  });

  it('answers "no room" at once, without asking again, for a while after PostgreSQL had none', async () => {
    const { leases, asks } = sharedRoom(0, { rowWhenEmpty: false });

    expect(await leases.take('org', DAY, 'wallet', 0, 1)).toBe(false);
    expect(leases.take('org', DAY, 'wallet', 0, 1)).toBe(false);
    expect(asks).toHaveLength(1);
  });

  it('gives a block back when its day or its limit changes, and leases afresh', async () => {
    const { leases, returned, asks } = sharedRoom(1000);
    await leases.take('org', DAY, 'wallet', 100, 1); // a block of 125

    await leases.take('org', '2031-03-15', 'wallet', 100, 1);
    await leases.take('org', '2031-03-15', 'wallet', 5, 1); // the plan changed

    expect(returned.map((r) => [r.day, r.count])).toEqual([
      [DAY, 124],
      ['2031-03-15', 124],
    ]);
    expect(asks.map((a) => [a.day, a.limit])).toEqual([
      [DAY, 100],
      ['2031-03-15', 100],
      ['2031-03-15', 5],
    ]);
  });

  it('gives idle blocks back, and every block at shutdown', async () => {
    const { leases, returned, left } = sharedRoom(50);
    await leases.take('org', DAY, 'wallet', 50, 10);
    await leases.take('other', DAY, 'imports', 50, 10);
    await leases.take('other', DAY, 'imports', 50, 10);
    leases.giveBack('other', DAY, 'imports', 10);

    expect(await leases.returnIdle(Date.now() - 60_000)).toBe(0);
    await leases.onApplicationShutdown();

    expect(returned).toEqual([{ orgId: 'other', day: DAY, meter: 'imports', count: 10 }]);
    expect(left()).toBe(50 - 10 - 10);
  });

  it('renews a block in use in the background, and stops spending one it could not renew before it lapses', async () => {
    const { leases, asks } = sharedRoom(1000);
    let now = Date.now();
    vi.spyOn(Date, 'now').mockImplementation(() => now);
    await leases.take('org', DAY, 'wallet', 1000, 1);
    expect(asks).toHaveLength(1);

    now += 6000; // past the renewal age: still answered from the block, a renewal (cost 0) goes out
    expect(leases.take('org', DAY, 'wallet', 1000, 1)).toBe(true);
    expect(asks.at(-1)).toMatchObject({ cost: 0, want: 0 });
    await Promise.resolve();

    now += METER_LEASE_TTL_MS; // no renewal answered in time: the block may lapse, so a new one is asked for
    const late = leases.take('org', DAY, 'wallet', 1000, 1);
    expect(late).toBeInstanceOf(Promise);
    expect(await late).toBe(true);
  });

  it('tries a failed renewal again a second later, not on every charge, spending the block meanwhile', async () => {
    const { leases, asks, databaseDown } = sharedRoom(1000);
    let now = Date.now();
    vi.spyOn(Date, 'now').mockImplementation(() => now);
    await leases.take('org', DAY, 'wallet', 1000, 1);
    databaseDown();

    now += 6000;
    expect(leases.take('org', DAY, 'wallet', 1000, 1)).toBe(true);
    await new Promise((r) => setImmediate(r));
    for (let i = 0; i < 5; i++) expect(leases.take('org', DAY, 'wallet', 1000, 1)).toBe(true);
    expect(asks).toHaveLength(2);
    now += 1000;
    expect(leases.take('org', DAY, 'wallet', 1000, 1)).toBe(true);
    expect(asks).toHaveLength(3);
  });
});
