import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiKeyVerificationStore } from '../../src/api-keys/api-key-verification.store.js';
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

  it('leases window tokens from a bucket that holds at most its capacity and refills at its rate', async () => {
    const k = await key();
    // Capacity 8, 10 tokens per second (0.01 per ms); ask for up to 5, cost 1.
    expect(await store.leaseWindow(k.id, 'default', 8, 0.01, 5, at(0), 1)).toEqual({ granted: 2, left: 6 });
    expect((await store.leaseWindow(k.id, 'default', 8, 0.01, 5, at(0), 1)).granted).toBe(2);
    expect((await store.leaseWindow(k.id, 'default', 8, 0.01, 5, at(0), 1)).granted).toBe(1);
    expect((await store.leaseWindow(k.id, 'default', 8, 0.01, 5, at(0), 1)).granted).toBe(1);
    expect((await store.leaseWindow(k.id, 'default', 8, 0.01, 5, at(0), 1)).granted).toBe(1);
    const empty = await store.leaseWindow(k.id, 'default', 8, 0.01, 5, at(0), 2);
    expect(empty.granted).toBe(0);
    // 300 ms later three tokens have come back; an hour later it is full again, never fuller.
    expect((await store.leaseWindow(k.id, 'default', 8, 0.01, 5, at(300), 3)).granted).toBe(3);
    expect(await store.leaseWindow(k.id, 'default', 8, 0.01, 100, at(3_600_000), 1)).toEqual({ granted: 2, left: 6 });
  });

  it('fails only the ask PostgreSQL refuses in a batch (a value its column cannot hold), never the other keys’', async () => {
    const [good, bad] = [await key(), await key()];
    const [ok, refused] = await Promise.allSettled([
      store.leaseWindow(good.id, 'default', 8, 0.01, 5, at(0), 1),
      // An ask of 5 * 10^9 tokens: out of range for the statement's integer column (SQLSTATE 22003).
      store.leaseWindow(bad.id, 'default', 8, 0.01, 5_000_000_000, at(0), 1),
    ]);
    expect(ok).toEqual({ status: 'fulfilled', value: { granted: 2, left: 6 } });
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
          store.leaseWindow(k.id, 'default', 8, 0.01, 5, at(0), 1),
          store.leaseWindow(k.id, 'default', 8, 0.01, 5, at(0), 1),
        ]),
      ),
      Promise.all([
        ...keys.map((k) => store.leaseCredits(k.id, 1, null, 10_000)),
        store.leaseCredits(bare.id, 1, null, 10_000),
      ]),
    ]);
    expect(windows.map((w) => w.granted)).toEqual(keys.flatMap(() => [2, 2]));
    expect(windows.map((w) => w.left)).toEqual(keys.flatMap(() => [6, 4]));
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

  it('answers null for a key without credits', async () => {
    const k = await key();
    expect(await store.leaseCredits(k.id, 1, null, 10)).toBeNull();
  });
});
