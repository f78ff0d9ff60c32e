import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiKeyVerificationStore } from '../../src/api-keys/api-key-verification.store.js';
import { settingsColumns, updateSettingsSql } from '../../src/api-keys/key-settings.sql.js';
import { CreditLeases } from '../../src/budgets/credit-leases.js';
import { SystemClock } from '../../src/common/clock.js';
import { KeyLimitStore } from '../../src/budgets/key-limit.store.js';
import { PeriodicJobs } from '../../src/common/periodic-jobs.js';
import { pgPool } from '../../src/database/pg-pool.js';
import { insertKeyRow, openRepositoryDatabase, type RepositoryDatabase } from '../support/factories.js';

/** The statements of per-key enforcement on real PostgreSQL, without the app. */
describe('the key limit store', () => {
  let r: RepositoryDatabase;
  let store: KeyLimitStore;
  let other: KeyLimitStore;
  const T0 = new Date('2031-06-01T12:00:00.000Z');
  const at = (ms: number) => new Date(T0.getTime() + ms);

  beforeAll(async () => {
    r = await openRepositoryDatabase(2);
    store = new KeyLimitStore(r.sources[0]!);
    other = new KeyLimitStore(r.sources[1]!);
  });
  afterAll(async () => r?.close());

  async function key() {
    const w = await r.seed.world('owner');
    return insertKeyRow(r.db.pool, { userId: w.userId, orgId: w.orgId });
  }

  it('leases a share of what a fixed window has available, at least the cost and at most the ask', async () => {
    const k = await key();
    // 10 a second; asks at 12:00:00.250 of up to 5, cost 1: a quarter of what is available.
    expect(await store.leaseWindow(k.id, 'default', 10, 1, 5, at(250), 1)).toEqual({
      granted: 3,
      start: T0.getTime(),
      previous: 0,
      current: 3,
    });
    expect((await store.leaseWindow(k.id, 'default', 10, 1, 5, at(300), 1)).granted).toBe(2);
    expect((await store.leaseWindow(k.id, 'default', 10, 1, 1, at(300), 1)).granted).toBe(1);
    // 4 left: the ask of 3 at a cost of 3 gets 3 (the cost), then a cost of 2 finds 1: nothing.
    expect((await store.leaseWindow(k.id, 'default', 10, 1, 3, at(400), 3)).granted).toBe(3);
    expect(await store.leaseWindow(k.id, 'default', 10, 1, 5, at(999), 2)).toMatchObject({ granted: 0, current: 9 });
  });

  it('rolls the count over at the window boundary and weighs the previous window by its overlap', async () => {
    const k = await key();
    expect((await store.leaseWindow(k.id, 'default', 10, 1, 10, at(900), 10)).granted).toBe(10);
    // 12:00:01.000: the 10 weigh in full; 12:00:01.600: they weigh 4, so 6 are available.
    expect(await store.leaseWindow(k.id, 'default', 10, 1, 10, at(1000), 1)).toEqual({
      granted: 0,
      start: at(1000).getTime(),
      previous: 10,
      current: 0,
    });
    expect((await store.leaseWindow(k.id, 'default', 10, 1, 10, at(1600), 1)).granted).toBe(2);
    expect((await store.leaseWindow(k.id, 'default', 10, 1, 10, at(1600), 4)).granted).toBe(4);
    expect((await store.leaseWindow(k.id, 'default', 10, 1, 10, at(1600), 1)).granted).toBe(0);
    // The window after: 6 counted weigh 6 at its start; two windows on, nothing weighs.
    expect(await store.leaseWindow(k.id, 'default', 10, 1, 10, at(2000), 4)).toMatchObject({ granted: 4, previous: 6 });
    expect(await store.leaseWindow(k.id, 'default', 10, 1, 10, at(4000), 1)).toMatchObject({
      granted: 3,
      previous: 0,
      current: 3,
    });
    // A late ask from a window the row has left counts in the row's window, its previous count in full.
    expect(await store.leaseWindow(k.id, 'default', 10, 1, 10, at(3500), 1)).toMatchObject({
      granted: 2,
      start: at(4000).getTime(),
      current: 5,
    });
  });

  it('counts a lease asked ahead for the next window in it, with the late asks of the window before', async () => {
    const k = await key();
    expect((await store.leaseWindow(k.id, 'default', 100, 1, 30, at(500), 1)).granted).toBe(25);
    // Asked at 12:00:00.900 for 12:00:01 (WindowLeases' lease ahead): the 25 weigh in full.
    expect(await store.leaseWindow(k.id, 'default', 100, 1, 10, at(1000), 1)).toEqual({
      granted: 10,
      start: at(1000).getTime(),
      previous: 25,
      current: 10,
    });
    // Another instance's ask at 12:00:00.950 counts in 12:00:01 too: never more than the limit in either.
    expect(await other.leaseWindow(k.id, 'default', 100, 1, 30, at(950), 1)).toEqual({
      granted: 17,
      start: at(1000).getTime(),
      previous: 25,
      current: 27,
    });
    // What was leased ahead and not spent comes off the window it was leased in.
    await store.returnWindow(k.id, 'default', 10, at(1000), 1);
    expect(await other.leaseWindow(k.id, 'default', 100, 1, 1, at(1000), 1)).toMatchObject({ current: 18 });
  });

  it('never grants more than the limit in a fixed window to two instances asking at once, nor deadlocks them', async () => {
    const keys = await Promise.all(Array.from({ length: 40 }, () => key()));
    const ids = keys.map((k) => k.id);
    await Promise.all(ids.map((id) => store.leaseWindow(id, 'default', 400, 1, 1, at(100), 1)));
    // Every statement either side sends, to catch a deadlock the store would quietly try again.
    const deadlocks: unknown[] = [];
    const spies = [r.sources[0]!, r.sources[1]!].map((source) => {
      const pool = pgPool(source);
      const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
      return vi.spyOn(pool, 'query').mockImplementation(((...args: unknown[]) =>
        query(...args).catch((error: { code?: string }) => {
          if (error.code === '40P01') deadlocks.push(error);
          throw error;
        })) as never);
    });
    // Each instance's batches name the keys in the other's reverse order: locked in statement
    // order, one would wait for the other's rows while holding its own.
    const asks = Array.from({ length: 25 }, () => [
      ...ids.map((id) => [id, store.leaseWindow(id, 'default', 400, 1, 16, at(500), 1)] as const),
      ...[...ids].reverse().map((id) => [id, other.leaseWindow(id, 'default', 400, 1, 16, at(500), 1)] as const),
    ]).flat();
    const granted = new Map<string, number>(ids.map((id) => [id, 1]));
    for (const [id, grant] of asks) granted.set(id, granted.get(id)! + (await grant).granted);
    spies.forEach((spy) => spy.mockRestore());
    expect(deadlocks).toEqual([]);
    // Every grant counted (none lost to a concurrent update), none beyond the limit: the window is spent.
    const { rows } = await r.db.pool.query(
      `SELECT key_id, current_count FROM key_rate_windows WHERE key_id = ANY($1::uuid[]) ORDER BY key_id`,
      [ids],
    );
    expect(rows.map((row) => [row.key_id, row.current_count])).toEqual([...granted].sort());
    expect(new Set(rows.map((row) => row.current_count))).toEqual(new Set([400]));
  });

  it('fails only the ask PostgreSQL refuses in a batch (a value its column cannot hold), never the other keys’', async () => {
    const [good, bad] = [await key(), await key()];
    const [ok, refused] = await Promise.allSettled([
      store.leaseWindow(good.id, 'default', 10, 1, 5, at(0), 1),
      // An ask of 5 * 10^9 tokens: out of range for the statement's integer column (SQLSTATE 22003).
      store.leaseWindow(bad.id, 'default', 10, 1, 5_000_000_000, at(0), 1),
    ]);
    expect(ok).toMatchObject({ status: 'fulfilled', value: { granted: 3, current: 3 } });
    expect(refused.status).toBe('rejected');
    expect((refused as PromiseRejectedResult).reason.code).toBe('22003');
  });

  it('never leases credits below zero, whichever instance asks, and refills at a new period', async () => {
    const k = await key();
    await r.db.pool.query(`UPDATE api_keys SET credits_remaining = 100 WHERE id = $1`, [k.id]);
    const grants = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? store : other).leaseCredits(k.id, 3, null, 10_000)),
    );
    const total = grants.reduce((n, g) => n + g!.granted, 0);
    expect(total).toBeLessThanOrEqual(100);
    expect(total).toBeGreaterThanOrEqual(98);
    const { rows } = await r.db.pool.query(`SELECT credits_remaining::int AS left FROM api_keys WHERE id = $1`, [k.id]);
    expect(rows[0].left).toBe(100 - total);

    const refill = { amount: 7, interval: 'daily' };
    await r.db.pool.query(
      `UPDATE api_keys SET credits_remaining = 0, credits_refill = $2, credits_period = $3 WHERE id = $1`,
      [k.id, JSON.stringify(refill), at(-86_400_000)],
    );
    const refilled = await store.leaseCredits(k.id, 1, T0, 10_000);
    expect(refilled).toMatchObject({ granted: 1, left: 6 });
    expect(refilled!.period!.toISOString()).toBe(T0.toISOString());
    // Given back to the same setting and period only.
    await store.returnCredits(k.id, 1, refilled!.epoch, at(-1));
    await store.returnCredits(k.id, 1, refilled!.epoch + 1, T0);
    await store.returnCredits(k.id, 1, refilled!.epoch, T0);
    expect(
      (await r.db.pool.query(`SELECT credits_remaining::int AS left FROM api_keys WHERE id = $1`, [k.id])).rows[0].left,
    ).toBe(7);
  });

  it('leases for many keys asked in one turn in one statement each kind, each key as if alone', async () => {
    const keys = await Promise.all(Array.from({ length: 12 }, () => key()));
    await r.db.pool.query(`UPDATE api_keys SET credits_remaining = 80 WHERE id = ANY($1::uuid[])`, [
      keys.map((k) => k.id),
    ]);
    const bare = await key();
    const sent = vi.spyOn(pgPool(r.sources[0]!), 'query');
    // Every key's window twice in the turn (a second round), and its credits once; one key without credits.
    const [windows, credits] = await Promise.all([
      Promise.all(
        keys.flatMap((k) => [
          store.leaseWindow(k.id, 'default', 10, 1, 5, at(0), 1),
          store.leaseWindow(k.id, 'default', 10, 1, 5, at(0), 1),
        ]),
      ),
      Promise.all([
        ...keys.map((k) => store.leaseCredits(k.id, 1, null, 10_000)),
        store.leaseCredits(bare.id, 1, null, 10_000),
      ]),
    ]);
    expect(windows.map((w) => w.granted)).toEqual(keys.flatMap(() => [3, 2]));
    expect(windows.map((w) => w.current)).toEqual(keys.flatMap(() => [3, 5]));
    expect(credits.slice(0, -1).map((c) => c?.granted)).toEqual(keys.map(() => 10));
    expect(credits.at(-1)).toBeNull();
    const { rows } = await r.db.pool.query(
      `SELECT count(*)::int AS n FROM api_keys WHERE id = ANY($1::uuid[]) AND credits_remaining = 70`,
      [keys.map((k) => k.id)],
    );
    expect(rows[0].n).toBe(12);
    // Windows: two rounds (each key twice); credits: one (the setting-up and checking queries go through r.db.pool).
    expect(sent.mock.calls.map(([q]) => (q as { name?: string }).name)).toEqual([
      'kui_lease_windows',
      'kui_lease_credits',
      'kui_lease_windows',
    ]);
    sent.mockRestore();
  });

  it('never deadlocks a batch of credit leases against a batched last-used write over the same keys', async () => {
    const keys = await Promise.all(Array.from({ length: 40 }, () => key()));
    const ids = keys.map((k) => k.id);
    await r.db.pool.query(`UPDATE api_keys SET credits_remaining = 1000000 WHERE id = ANY($1::uuid[])`, [ids]);
    const lastUsed = new ApiKeyVerificationStore(r.sources[1]!, new SystemClock());
    // Each side names the keys in the other's reverse order, many times at once: locked in
    // statement order, one of them would wait for the other's rows while holding its own.
    for (let i = 0; i < 10; i++) {
      const at = [...ids].reverse().map((_, j) => new Date(Date.UTC(2031, 0, 1, 0, i * 2 + 1, j)));
      await Promise.all([
        ...ids.map((id) => store.leaseCredits(id, 1, null, 10)),
        lastUsed.touchLastUsed([...ids].reverse(), at),
        lastUsed.touchLastUsed([...ids].reverse(), at),
        ...ids.map((id) => other.leaseCredits(id, 1, null, 10)),
      ]);
    }
    const { rows } = await r.db.pool.query(
      `SELECT sum(1000000 - credits_remaining)::int AS leased, count(last_used_at)::int AS used FROM api_keys WHERE id = ANY($1::uuid[])`,
      [ids],
    );
    expect(rows[0]).toEqual({ leased: 40 * 2 * 10 * 10, used: 40 });
  });

  it('gives credits leased and not spent back to the key when idle or at shutdown', async () => {
    const k = await key();
    await r.db.pool.query(`UPDATE api_keys SET credits_remaining = 100 WHERE id = $1`, [k.id]);
    const leases = new CreditLeases(store, new PeriodicJobs());
    const credits = { refill: null, epoch: 0 };
    expect(await leases.take(k.id, credits, 1, T0)).toBe(0);
    expect(leases.take(k.id, credits, 1, T0)).toBe(0);
    const balance = async () =>
      (await r.db.pool.query(`SELECT credits_remaining::int AS n FROM api_keys WHERE id = $1`, [k.id])).rows[0].n;
    expect(await balance()).toBe(87);
    expect(await leases.returnIdle(Date.now() - 60_000)).toBe(0);
    await leases.onApplicationShutdown();
    expect(await balance()).toBe(98);
  });

  it('notifies no cached verification when credits are leased, and does when a setting changes', async () => {
    const k = await key();
    await r.db.pool.query(`UPDATE api_keys SET credits_remaining = 50 WHERE id = $1`, [k.id]);
    const listener = await r.db.pool.connect();
    const heard: string[] = [];
    listener.on('notification', (n) => heard.push(n.payload ?? ''));
    try {
      await listener.query('LISTEN kui_verification');
      await store.leaseCredits(k.id, 1, null, 10);
      await store.returnCredits(k.id, 1, 0, null);
      await r.db.pool.query(`SELECT pg_sleep(0.2)`);
      expect(heard).toEqual([]);
      await r.db.pool.query(`UPDATE api_keys SET enabled = false WHERE id = $1`, [k.id]);
      await expect.poll(() => heard.some((p) => p.includes(k.id))).toBe(true);
    } finally {
      listener.release();
    }
  });

  it('takes window allowance given back off the count of the window it was leased in, never below zero', async () => {
    const k = await key();
    const counts = async () =>
      (await r.db.pool.query(`SELECT previous_count, current_count FROM key_rate_windows WHERE key_id = $1`, [k.id]))
        .rows[0];
    expect((await store.leaseWindow(k.id, 'default', 100, 1, 20, at(100), 1)).granted).toBe(20);
    await store.returnWindow(k.id, 'default', 15, T0, 1);
    expect(await counts()).toEqual({ previous_count: 0, current_count: 5 });
    // Another window's allowance (an older one's, or another window name's) takes nothing.
    await store.returnWindow(k.id, 'default', 5, at(-1000), 1);
    await store.returnWindow(k.id, 'other', 5, T0, 1);
    expect(await counts()).toEqual({ previous_count: 0, current_count: 5 });
    await store.returnWindow(k.id, 'default', 9, T0, 1);
    expect(await counts()).toEqual({ previous_count: 0, current_count: 0 });
    // Once the row has moved on to the next window, it comes off what the window before counts.
    expect((await store.leaseWindow(k.id, 'default', 100, 1, 20, at(500), 1)).granted).toBe(20);
    expect((await store.leaseWindow(k.id, 'default', 100, 1, 1, at(1100), 1)).granted).toBe(1);
    await store.returnWindow(k.id, 'default', 12, T0, 1);
    expect(await counts()).toEqual({ previous_count: 8, current_count: 1 });
  });

  it('counts what a window still holds in the new one when its length changes', async () => {
    const k = await key();
    // 12:00 on a day window: 9 counted today.
    expect((await store.leaseWindow(k.id, 'default', 100_000, 86_400, 9, at(0), 9)).granted).toBe(9);
    // Now an hour's window of 10: the 9 count in this hour; 1 more fits.
    expect(await store.leaseWindow(k.id, 'default', 10, 3600, 5, at(1000), 1)).toEqual({
      granted: 1,
      start: T0.getTime(),
      previous: 0,
      current: 10,
    });
    // The next hour: the 10 weigh as the previous hour's.
    expect(await store.leaseWindow(k.id, 'default', 10, 3600, 5, at(3_600_000 + 1_800_000), 1)).toMatchObject({
      granted: 2,
      previous: 10,
    });
    // Back to a day's window at 13:30: what the hour's window still counts carries into the day's.
    expect(await store.leaseWindow(k.id, 'default', 100, 86_400, 1, at(3_600_000 + 1_800_000), 1)).toMatchObject({
      start: Date.parse('2031-06-01T00:00:00.000Z'),
      previous: 0,
      current: 8,
    });
  });

  it('never gives credits leased before a change of the credits back into the new balance, even racing the change', async () => {
    const k = await key();
    await r.db.pool.query(`UPDATE api_keys SET credits_remaining = 1000 WHERE id = $1`, [k.id]);
    const leased = await store.leaseCredits(k.id, 1, null, 10_000);
    expect(leased).toMatchObject({ granted: 125, epoch: 0, left: 875 });
    const balance = async () =>
      (await r.db.pool.query(`SELECT credits_remaining::int AS n FROM api_keys WHERE id = $1`, [k.id])).rows[0].n;
    // The PATCH's own statement (credits: { remaining: 10 }), left uncommitted while the give-back waits on its row.
    const patch = updateSettingsSql('id', settingsColumns({ credits: { remaining: 10 } }, T0), 'k.credits_epoch');
    const tx = await r.db.pool.connect();
    try {
      await tx.query('BEGIN');
      expect((await tx.query(patch.text, [k.id, k.id, ...patch.values])).rows).toEqual([{ credits_epoch: 1 }]);
      let landed = false;
      const givingBack = store.returnCredits(k.id, 124, leased!.epoch, null).then(() => (landed = true));
      await r.db.pool.query(`SELECT pg_sleep(0.1)`);
      expect(landed).toBe(false);
      await tx.query('COMMIT');
      await givingBack;
    } finally {
      tx.release();
    }
    expect(await balance()).toBe(10);
    // After it, too; and given back under the new setting, it lands.
    await store.returnCredits(k.id, 124, leased!.epoch, null);
    expect(await balance()).toBe(10);
    await store.returnCredits(k.id, 1, 1, null);
    expect(await balance()).toBe(11);
  });

  it('answers null for a key without credits', async () => {
    const k = await key();
    expect(await store.leaseCredits(k.id, 1, null, 10)).toBeNull();
  });
});
