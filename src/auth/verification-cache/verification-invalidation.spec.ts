import { describe, expect, it } from 'vitest';
import { awaitInvalidationsAcknowledged, type AcknowledgementEvents } from './verification-invalidation.js';

/** A fake lease: announcements are fired by hand; `waits` records how long each wait was allowed. */
function events() {
  const waiters = new Set<() => void>();
  const e = {
    hearsAcknowledgements: true,
    acknowledgementsSeen: 0,
    waits: [] as number[],
    acknowledgementAfter(seen: number, ms: number) {
      e.waits.push(ms);
      if (e.acknowledgementsSeen > seen) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        waiters.add(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
    announce() {
      e.acknowledgementsSeen++;
      for (const w of waiters) w();
      waiters.clear();
    },
  };
  return e satisfies AcknowledgementEvents;
}

describe('awaitInvalidationsAcknowledged', () => {
  it('re-checks when an acknowledgement is announced, not on a polling timer', async () => {
    const ev = events();
    let pending = 1;
    const calls: unknown[][] = [];
    const query = async (_sql: string, params: unknown[]) => {
      calls.push(params);
      return [{ seq: '42', pending, expires_in_ms: 3000 }];
    };
    const waiting = awaitInvalidationsAcknowledged(query, 10_000, ev);
    await new Promise((r) => setTimeout(r, 60));
    // 60 ms with one instance pending: no polling meanwhile, one wait bounded by a safety re-check.
    expect(calls).toEqual([[null]]);
    expect(ev.waits).toHaveLength(1);
    expect(ev.waits[0]).toBeGreaterThanOrEqual(60);
    pending = 0;
    ev.announce();
    const seconds = await waiting;
    expect(calls).toEqual([[null], ['42']]);
    expect(seconds).toBeGreaterThanOrEqual(0.05);
  });

  it('does not miss an announcement that lands while the check is running', async () => {
    const ev = events();
    let pending = 1;
    const query = async () => {
      const row = { seq: '7', pending, expires_in_ms: 3000 };
      // The acknowledgement arrives between the read and the wait.
      if (pending) {
        pending = 0;
        ev.announce();
      }
      return [row];
    };
    const started = performance.now();
    await awaitInvalidationsAcknowledged(query, 10_000, ev);
    expect(performance.now() - started).toBeLessThan(50);
  });

  it('re-checks when the first pending lease runs out, announced or not', async () => {
    const ev = events();
    let expired = false;
    const query = async () => [{ seq: '9', pending: expired ? 0 : 1, expires_in_ms: expired ? null : 30 }];
    setTimeout(() => (expired = true), 25);
    await awaitInvalidationsAcknowledged(query, 10_000, ev);
    expect(ev.waits[0]).toBe(31);
  });

  it('polls with a short back-off when no announcements reach this process', async () => {
    let checks = 0;
    const query = async () => [{ seq: '1', pending: ++checks < 4 ? 1 : 0, expires_in_ms: 3000 }];
    await awaitInvalidationsAcknowledged(query, 10_000, { ...events(), hearsAcknowledgements: false });
    expect(checks).toBe(4);
  });
});
