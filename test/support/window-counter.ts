import type { KeyLimitStore, WindowGrant } from '../../src/budgets/key-limit.store.js';
import { availableAt } from '../../src/budgets/sliding-window.js';

/**
 * One shared sliding-window counter per key and window, as the lease statement keeps it (the
 * statement itself is tested on PostgreSQL), recording what each ask wanted and when for.
 */
export function sharedWindowCounter() {
  const wants: number[] = [];
  /** The instant each ask was made for (a lease ahead asks for the next window's start). */
  const nows: number[] = [];
  const rows = new Map<string, { start: number; previous: number; current: number }>();
  const store = {
    leaseWindow: async (
      key: string,
      name: string,
      limit: number,
      seconds: number,
      want: number,
      now: Date,
      cost: number,
    ): Promise<WindowGrant> => {
      wants.push(want);
      nows.push(now.getTime());
      await Promise.resolve();
      const ms = seconds * 1000;
      const t = now.getTime();
      const start = t - (t % ms);
      let row = rows.get(`${key} ${name}`) ?? { start, previous: 0, current: 0 };
      if (start > row.start) row = { start, previous: start - row.start <= ms ? row.current : 0, current: 0 };
      const available = availableAt(limit, ms, row.start, row.previous, row.current, t);
      const granted =
        available >= cost ? Math.min(Math.floor(available), want, Math.max(cost, Math.ceil(available / 4))) : 0;
      row.current += granted;
      rows.set(`${key} ${name}`, row);
      return { granted, ...row };
    },
    // As RETURN_WINDOW_SQL: off the count of the fixed window the tokens were leased in.
    returnWindow: async (key: string, name: string, amount: number, start: Date) => {
      await Promise.resolve();
      const row = rows.get(`${key} ${name}`);
      if (row && row.start === start.getTime()) row.current -= Math.min(row.current, amount);
    },
  } as unknown as KeyLimitStore;
  return { store, wants, nows, rows };
}
