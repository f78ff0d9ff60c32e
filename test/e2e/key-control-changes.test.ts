import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CreditLeases } from '../../src/budgets/credit-leases.js';
import { KeyLimitStore } from '../../src/budgets/key-limit.store.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { TestClock } from '../support/clock.js';

/**
 * A change of a key's windows or credits on three instances sharing one PostgreSQL, each holding
 * leases of the key when it comes: it applies everywhere by the time the PATCH answers (no wait
 * after it), and what the instances held under the old setting never counts again.
 */
describe('changes of a key’s windows and credits across three instances', () => {
  // Mid-morning: a day's window started at midnight, and nothing of the day before weighs on it.
  const clock = new TestClock('2026-04-01T10:00:00.000Z');
  let a: TestApp;
  let b: TestApp;
  let c: TestApp;
  const all = () => [a, b, c];
  beforeAll(async () => {
    a = await startTestApp({ clock });
    b = await startTestApp({ db: a.db, clock });
    c = await startTestApp({ db: a.db, clock });
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await c?.close();
    await b?.close();
    await a?.close();
  });

  async function mint(settings: Record<string, unknown>) {
    const w = await a.seed.world('owner');
    const minted = await a.api.post('/api-keys', w.session, { org_id: w.orgId, ...settings });
    expect(minted.status).toBe(201);
    const keyId = minted.body.id as string;
    const patch = (body: unknown) => a.api.request('PATCH', `/api-keys/${keyId}`, { token: w.session, body });
    return { key: minted.body.key as string, keyId, patch };
  }
  /** `n` requests of the key, the i-th on instance i mod 3: one after another, or all at once. */
  const spread = async (key: string, n: number, atOnce: boolean) => {
    const one = (i: number) =>
      all()
        [i % 3]!.api.get('/me', key)
        .then((r) => r.status);
    if (atOnce) return Promise.all(Array.from({ length: n }, (_, i) => one(i)));
    const statuses: number[] = [];
    for (let i = 0; i < n; i++) statuses.push(await one(i));
    return statuses;
  };
  /**
   * The instances b and c give back what they held a little late: a PATCH that answered before
   * their give-backs landed would be seen here, so the check right after it proves the wait.
   */
  const slowGiveBacks = () => {
    for (const t of [b, c]) {
      const store = t.app.get(KeyLimitStore, { strict: false });
      for (const method of ['returnWindow', 'returnCredits'] as const) {
        const real = store[method].bind(store) as (...args: unknown[]) => Promise<void>;
        vi.spyOn(store, method).mockImplementation((async (...args: unknown[]) => {
          await new Promise((r) => setTimeout(r, 150));
          return real(...args);
        }) as never);
      }
    }
  };

  it('lets at most 5 more requests pass anywhere once a window of 100,000 a day with 20 spent becomes 25 a day', async () => {
    const k = await mint({ rate_limits: [{ name: 'default', limit: 100_000, window_seconds: 86_400 }] });
    expect(await spread(k.key, 20, false)).toEqual(Array.from({ length: 20 }, () => 200));
    const counted = async () =>
      (
        await a.db.pool.query(`SELECT current_count FROM key_rate_windows WHERE key_id = $1 AND name = 'default'`, [
          k.keyId,
        ])
      ).rows[0].current_count as number;
    // Every instance holds a lease far beyond what it spent: the count has it all as taken.
    expect(await counted()).toBeGreaterThan(25 * 3);
    slowGiveBacks();
    const patched = await k.patch({ rate_limits: [{ name: 'default', limit: 25, window_seconds: 86_400 }] });
    expect(patched.status).toBe(200);
    // Straight after the answer: every instance has dropped its lease and given back what it held unspent.
    expect(await counted()).toBe(20);
    const after = await spread(k.key, 30, true);
    expect(after.filter((s) => s === 200)).toHaveLength(5);
    expect(after.filter((s) => s !== 200)).toEqual(Array.from({ length: 25 }, () => 429));
    expect(await counted()).toBe(25);
    vi.restoreAllMocks();
  });

  it('applies a shorter window at once too, counting what was spent in the longer one', async () => {
    const k = await mint({ rate_limits: [{ name: 'default', limit: 100_000, window_seconds: 86_400 }] });
    expect(await spread(k.key, 9, false)).toEqual(Array.from({ length: 9 }, () => 200));
    expect((await k.patch({ rate_limits: [{ name: 'default', limit: 10, window_seconds: 3600 }] })).status).toBe(200);
    const after = await spread(k.key, 12, true);
    expect(after.filter((s) => s === 200)).toHaveLength(1);
  });

  it('makes lowered credits the exact balance: what the instances held under the old setting never lands in it', async () => {
    const k = await mint({ credits: { remaining: 1000 } });
    expect(await spread(k.key, 9, false)).toEqual(Array.from({ length: 9 }, () => 200));
    const balance = async () =>
      (await a.db.pool.query(`SELECT credits_remaining::int AS n FROM api_keys WHERE id = $1`, [k.keyId])).rows[0]
        .n as number;
    // Each instance holds a block it has barely spent.
    expect(await balance()).toBeLessThan(1000 - 9 - 3 * 50);
    slowGiveBacks();
    const patched = await k.patch({ credits: { remaining: 10 } });
    expect(patched.status).toBe(200);
    expect(patched.body.credits).toEqual({ remaining: 10 });
    // Every instance has tried to give back its block by now, and none of it landed.
    expect(await balance()).toBe(10);
    // What is left at shutdown or when idle is given back too: never into the new balance.
    for (const t of all()) await t.app.get(CreditLeases, { strict: false }).returnIdle(Number.POSITIVE_INFINITY);
    expect(await balance()).toBe(10);
    const after = await spread(k.key, 24, true);
    expect(after.filter((s) => s === 200)).toHaveLength(10);
    expect(after.filter((s) => s !== 200)).toEqual(Array.from({ length: 14 }, () => 429));
    expect(await balance()).toBe(0);
    vi.restoreAllMocks();
  });
});
