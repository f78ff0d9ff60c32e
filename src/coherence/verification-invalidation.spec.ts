import { describe, expect, it } from 'vitest';
import { awaitInvalidationsAcknowledged, type AcknowledgementEvents } from './verification-invalidation.js';

/** A fake lease: announcements are fired by hand; `waits` records how long each wait was allowed. */
function events() {
  const waiters = new Set<() => void>();
  const e = {
    hearsAcknowledgements: true,
    acknowledgementsSeen: 0,
    ownInstanceId: 'me' as string | null,
    appliedSeq: 0,
    applied: (seq: number) => e.appliedSeq >= seq,
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
      return [{ seq: '42', pending, own_pending: false, expires_in_ms: 3000 }];
    };
    const waiting = awaitInvalidationsAcknowledged(query, 10_000, ev);
    await new Promise((r) => setTimeout(r, 60));
    // 60 ms with one instance pending: no polling meanwhile, one wait bounded by a safety re-check.
    expect(calls).toEqual([[null, 'me']]);
    expect(ev.waits).toHaveLength(1);
    expect(ev.waits[0]).toBeGreaterThanOrEqual(60);
    pending = 0;
    ev.announce();
    const seconds = await waiting;
    expect(calls).toEqual([
      [null, 'me'],
      ['42', 'me'],
    ]);
    expect(seconds).toBeGreaterThanOrEqual(0.05);
  });

  it('does not miss an announcement that lands while the check is running', async () => {
    const ev = events();
    let pending = 1;
    const query = async () => {
      const row = { seq: '7', pending, own_pending: false, expires_in_ms: 3000 };
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
    const query = async () => [
      { seq: '9', pending: expired ? 0 : 1, own_pending: false, expires_in_ms: expired ? null : 30 },
    ];
    setTimeout(() => (expired = true), 25);
    await awaitInvalidationsAcknowledged(query, 10_000, ev);
    expect(ev.waits[0]).toBe(31);
  });

  it('polls with a short back-off, counting every lease in the database, when no announcements reach this process', async () => {
    const calls: unknown[][] = [];
    const query = async (_sql: string, params: unknown[]) => {
      calls.push(params);
      return [{ seq: '1', pending: calls.length < 4 ? 1 : 0, own_pending: false, expires_in_ms: 3000 }];
    };
    const ev = events();
    ev.hearsAcknowledgements = false;
    await awaitInvalidationsAcknowledged(query, 10_000, ev);
    expect(calls).toEqual([
      [null, null],
      ['1', null],
      ['1', null],
      ['1', null],
    ]);
  });

  it("waits for this process's own lease in process: once it has applied the change, no further query", async () => {
    const ev = events();
    const calls: unknown[][] = [];
    const query = async (_sql: string, params: unknown[]) => {
      calls.push(params);
      return [{ seq: '5', pending: 0, own_pending: true, expires_in_ms: null }];
    };
    let done = false;
    const waiting = awaitInvalidationsAcknowledged(query, 10_000, ev).then(() => (done = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(done).toBe(false);
    ev.appliedSeq = 4; // an earlier change applied: not enough
    ev.announce();
    await new Promise((r) => setTimeout(r, 20));
    expect(done).toBe(false);
    const before = calls.length;
    ev.appliedSeq = 5;
    ev.announce();
    await waiting;
    expect(calls.length).toBe(before);
  });
});
