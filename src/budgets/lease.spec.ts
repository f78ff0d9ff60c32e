import { afterEach, describe, expect, it, vi } from 'vitest';
import { Lease, LEASE_WAIT_MS, type LeaseSource } from './lease.js';

/** A source that answers each ask from a script, recording what each ask wanted (cost and demand). */
function scripted(answer: (lease: Lease, cost: number) => boolean) {
  const asks: Array<{ cost: number; demand: number }> = [];
  const left: number[] = [];
  const source: LeaseSource<Lease> = {
    ask: async (lease, cost) => {
      asks.push({ cost, demand: lease.demand });
      await Promise.resolve();
      return answer(lease, cost);
    },
    left: (lease) => left.push(lease.demand),
  };
  return { source, asks, left };
}

describe('Lease', () => {
  afterEach(() => vi.restoreAllMocks());

  it('takes from what it holds until the tokens run out or expire, and refuses from memory what the source refused', () => {
    const lease = new Lease(0);
    lease.tokens = 4;
    lease.expiresAt = 5000;
    expect(lease.take(2, 1500)).toBe(true);
    expect(lease.lastUsed).toBe(1500);
    // The last use is recorded to within a second.
    expect(lease.take(1, 2400)).toBe(true);
    expect(lease.lastUsed).toBe(1500);
    expect(lease.take(2, 2500)).toBe(false);
    expect(lease.take(1, 5000)).toBe(false);
    expect(lease.take(1, 2500)).toBe(true);
    expect(lease.lastUsed).toBe(2500);

    lease.refuse(5, 50);
    expect(lease.refuses(5, 49)).toBe(true);
    expect(lease.refuses(4, 49)).toBe(false); // a cheaper request still asks
    expect(lease.refuses(5, 50)).toBe(false);
    lease.forget();
    expect(lease.refuses(5, 49)).toBe(false);
  });

  it('makes the requests it does not cover wait for one ask, then asks once for all who still wait', async () => {
    const { source, asks, left } = scripted((lease, cost) => {
      lease.tokens += asks.length === 1 ? cost : lease.demand;
      return true;
    });
    const lease = new Lease(0);

    const answers = await Promise.all(Array.from({ length: 5 }, () => lease.wait(1, source)));

    expect(answers).toEqual([true, true, true, true, true]);
    expect(asks).toEqual([
      { cost: 1, demand: 1 },
      { cost: 1, demand: 4 },
    ]);
    expect(lease.demand).toBe(0);
    expect(left).toEqual([4, 3, 2, 1, 0]);
  });

  it('refuses at once when the source refused, and admits without spending when the budget no longer limits', async () => {
    const refusing = scripted((lease, cost) => {
      lease.refuse(cost, Date.now() + 1000);
      return true;
    });
    expect(await new Lease(0).wait(1, refusing.source)).toBe(false);
    expect(refusing.asks).toHaveLength(1);

    const unlimited = scripted(() => false);
    const lease = new Lease(0);
    expect(await lease.wait(1, unlimited.source, 42)).toBe(true);
    expect(lease.lastUsed).toBe(0);
  });

  it('asks again while the source grants too little, and answers within LEASE_WAIT_MS', async () => {
    let now = 1_000_000;
    vi.spyOn(Date, 'now').mockImplementation(() => now);
    const { source, asks } = scripted((lease) => {
      now += 1000;
      lease.tokens += 1;
      return true;
    });
    const lease = new Lease(0);

    expect(await lease.wait(3, source, 7)).toBe(true);
    expect(lease.lastUsed).toBe(7);
    expect(await lease.wait(100, source)).toBe(false);
    expect(asks).toHaveLength(3 + LEASE_WAIT_MS / 1000);
  });
});
