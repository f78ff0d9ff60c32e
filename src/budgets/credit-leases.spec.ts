import { describe, expect, it } from 'vitest';
import { PeriodicJobs } from '../common/periodic-jobs.js';
import { CreditLeases } from './credit-leases.js';
import type { CreditGrant, KeyLimitStore } from './key-limit.store.js';

const NOW = new Date('2031-06-01T12:00:00.000Z');

/**
 * One key's balance as the lease statements keep it (they are tested on PostgreSQL): `change`
 * sets a new balance and moves the epoch, as a PATCH of the credits does.
 */
function balance(initial: number) {
  const row = { remaining: initial, epoch: 0 };
  const store = {
    leaseCredits: async (_k: string, cost: number, period: Date | null, maxBlock: number, want = cost) => {
      await Promise.resolve();
      const granted =
        row.remaining >= cost
          ? Math.min(row.remaining, Math.max(cost, want, Math.min(maxBlock, Math.ceil(row.remaining / 8))))
          : 0;
      row.remaining -= granted;
      return { granted, epoch: row.epoch, period, left: row.remaining } satisfies CreditGrant;
    },
    // As RETURN_CREDITS_SQL: only to the setting the credits were leased under.
    returnCredits: async (_k: string, amount: number, epoch: number) => {
      await Promise.resolve();
      if (epoch === row.epoch) row.remaining += amount;
    },
  } as unknown as KeyLimitStore;
  const change = (remaining: number) => Object.assign(row, { remaining, epoch: row.epoch + 1 });
  return { store, row, change };
}

describe('CreditLeases after a change of the credits', () => {
  it('gives back what an instance held only to the setting it was leased under: the new balance stays exact', async () => {
    const { store, row, change } = balance(1000);
    const leases = new CreditLeases(store, new PeriodicJobs());
    expect(await leases.take('k', { refill: null, epoch: 0 }, 1, NOW)).toBe(0);
    expect(row.remaining).toBe(875);
    change(10);
    await leases.drop('k');
    expect(row.remaining).toBe(10);
  });

  it('gives back what an instance held to the same setting when another setting of the key changed', async () => {
    const { store, row } = balance(1000);
    const leases = new CreditLeases(store, new PeriodicJobs());
    expect(await leases.take('k', { refill: null, epoch: 0 }, 1, NOW)).toBe(0);
    await leases.drop('k');
    expect(row.remaining).toBe(999);
  });

  it('never puts a credit a refused request took under the old setting into a lease of the new one', async () => {
    const { store, row, change } = balance(1000);
    const leases = new CreditLeases(store, new PeriodicJobs());
    const old = { refill: null, epoch: 0 };
    expect(await leases.take('k', old, 1, NOW)).toBe(0);
    change(10);
    const current = { refill: null, epoch: 1 };
    expect(await leases.take('k', current, 1, NOW)).toBe(0);
    // A request admitted before the change is refused by a later step: its credit is not this balance's.
    leases.giveBack('k', old, 1, NOW);
    leases.giveBack('k', current, 1, NOW);
    await leases.returnIdle(Number.POSITIVE_INFINITY);
    expect(row.remaining).toBe(10);
  });
});
