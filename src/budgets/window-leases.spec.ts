import { describe, expect, it } from 'vitest';
import type { KeyLimitStore, WindowGrant } from './key-limit.store.js';
import { WindowLeases } from './window-leases.js';

/** A shared bucket of `tokens`, granting at most `perAsk` per ask, recording what each ask wanted. */
function bucket(tokens: number, perAsk: number) {
  const wants: number[] = [];
  const store = {
    leaseWindow: async (_k: string, _n: string, _cap: number, _perMs: number, want: number): Promise<WindowGrant> => {
      wants.push(want);
      await new Promise((r) => setTimeout(r, 5));
      const granted = Math.min(want, perAsk, tokens);
      tokens -= granted;
      return { granted, left: tokens };
    },
  } as unknown as KeyLimitStore;
  return { store, wants };
}

describe('WindowLeases', () => {
  it('lets requests that arrive during a lease wait for it, and asks again for all who still wait', async () => {
    const { store, wants } = bucket(5, 2);
    const leases = new WindowLeases(store);
    const w = { name: 'default', limit: 1000, window_seconds: 1 };
    const answers = await Promise.all(Array.from({ length: 12 }, () => leases.take('k', w, 1, Date.now())));
    expect(answers.filter((a) => a === 0)).toHaveLength(5);
    expect(answers.filter((a) => a !== 0).every((a) => a > 0)).toBe(true);
    // The first ask is the first request's; later asks carry every request still waiting.
    expect(wants[0]).toBe(5);
    expect(wants[1]).toBe(10);
  });
});
