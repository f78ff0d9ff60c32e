import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ApiKeyStore, OutcomeCounts } from './api-key-store.js';
import {
  OUTCOME_FLUSH_MS,
  VERIFICATION_OUTCOMES,
  VerificationOutcomeRecorder,
  type Outcome,
} from './verification-outcome-recorder.js';

/** The store's one write of the recorder, recorded per call (one call is one statement). */
function fakeStore() {
  const writes: OutcomeCounts[][] = [];
  let fail = false;
  const store: Pick<ApiKeyStore, 'recordOutcomes'> = {
    recordOutcomes: async (rows) => {
      if (fail) throw new Error('connection refused');
      writes.push(rows);
    },
  };
  return {
    recorder: new VerificationOutcomeRecorder(store as ApiKeyStore),
    writes,
    failing: (v: boolean) => (fail = v),
  };
}

const at = (iso: string) => Date.parse(iso);
const counts = (of: Partial<Record<Outcome, number>>) => VERIFICATION_OUTCOMES.map((o) => of[o] ?? 0);

describe('VerificationOutcomeRecorder', () => {
  afterEach(() => vi.useRealTimers());

  it('adds up a batch per key, UTC hour and outcome, and writes it all in one call', async () => {
    const { recorder, writes } = fakeStore();
    recorder.count('k1', 'valid', at('2026-05-01T22:59:59.999Z'));
    recorder.count('k1', 'valid', at('2026-05-01T22:00:00Z'));
    recorder.count('k1', 'rate_limited', at('2026-05-01T22:30:00Z'));
    recorder.count('k1', 'valid', at('2026-05-01T23:00:00Z'));
    recorder.count('k2', 'insufficient_scope', at('2026-05-01T22:10:00Z'));
    // Back into an hour already counted (a request stamped just before the hour turned).
    recorder.count('k1', 'revoked', at('2026-05-01T22:59:59Z'));
    await recorder.flush();

    expect(writes).toHaveLength(1);
    expect(writes[0]).toEqual([
      {
        keyId: 'k1',
        hour: new Date('2026-05-01T22:00:00Z'),
        counts: counts({ valid: 2, rate_limited: 1, revoked: 1 }),
      },
      { keyId: 'k2', hour: new Date('2026-05-01T22:00:00Z'), counts: counts({ insufficient_scope: 1 }) },
      { keyId: 'k1', hour: new Date('2026-05-01T23:00:00Z'), counts: counts({ valid: 1 }) },
    ]);
  });

  it('writes nothing per request: many requests are one write, started by a timer, and the next batch starts afresh', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { recorder, writes } = fakeStore();
    for (let i = 0; i < 1000; i++)
      recorder.count(`k${Math.floor(i / 100)}`, i % 2 ? 'valid' : 'expired', at('2026-05-01T12:00:00Z'));
    await vi.advanceTimersByTimeAsync(OUTCOME_FLUSH_MS - 1);
    expect(writes).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(writes).toHaveLength(1);
    expect(writes[0]).toHaveLength(10);
    expect(writes[0].every((r) => r.counts[0] === 50 && r.counts[2] === 50)).toBe(true);

    recorder.count('k0', 'valid', at('2026-05-01T12:00:01Z'));
    await recorder.flush();
    expect(writes[1]).toEqual([{ keyId: 'k0', hour: new Date('2026-05-01T12:00:00Z'), counts: counts({ valid: 1 }) }]);
  });

  it('starts a write at once when the pending rows reach the bound, without waiting for the timer', async () => {
    const { recorder, writes } = fakeStore();
    for (let i = 0; i < 20_000; i++) recorder.count(`k${i}`, 'valid', at('2026-05-01T12:00:00Z'));
    await Promise.resolve();
    expect(writes).toHaveLength(1);
    expect(writes[0]).toHaveLength(20_000);
  });

  it('drops a batch the database refuses (never failing a request), and drains what is pending at shutdown', async () => {
    const { recorder, writes, failing } = fakeStore();
    failing(true);
    recorder.count('k1', 'valid', at('2026-05-01T12:00:00Z'));
    await recorder.flush();
    failing(false);
    recorder.count('k2', 'disabled', at('2026-05-01T12:00:00Z'));
    await recorder.onApplicationShutdown();
    expect(writes.map((w) => w.map((r) => r.keyId))).toEqual([['k2']]);
  });
});
