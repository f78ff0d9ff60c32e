import { describe, expect, it, vi } from 'vitest';
import { TestClock } from '../../test/support/clock.js';
import { SYSTEM_ATTRIBUTION, type Attribution } from '../common/meters.js';
import { DEFAULT_PLAN_LIMITS } from '../common/plan-limits.js';
import type { EventOutbox } from '../events/event-outbox.js';
import { Settings } from '../settings/settings.js';
import type { MeterCount, MeterLeaseRepository } from './meter-lease.repository.js';
import { MeterCounts } from './meter-counts.js';
import type { OrgMeterLeases } from '../budgets/org-meter-leases.js';
import { UsageThresholds } from './usage-thresholds.js';

const DAY = '2031-03-14';
const ORG = '7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
const KEY: Attribution = { kind: 'api_key', credentialId: 'k-1', userId: 'u-1' };
const FREE = DEFAULT_PLAN_LIMITS.free;

/** A counter on a repository that records each write and answers the wallet's counted use after it. */
function counts(options: { fail?: () => Error | null; counted?: () => number } = {}) {
  const writes: MeterCount[][] = [];
  const emitOnce = vi.fn(async (_kind: string, _subject: string, _mark: string, _event: object) => undefined);
  const repository = {
    count: async (rows: MeterCount[]) => {
      const error = options.fail?.();
      if (error) throw error;
      writes.push(rows.map((r) => ({ ...r })));
      return [{ orgId: ORG, day: DAY, meter: 'wallet', used: options.counted?.() ?? 0 }];
    },
  } as unknown as MeterLeaseRepository;
  const settings = new Settings({ session: { secret: 'x'.repeat(32) }, clock: new TestClock(`${DAY}T12:00:00.000Z`) });
  const thresholds = new UsageThresholds({ enabled: true, emitOnce } as unknown as EventOutbox);
  const sut = new MeterCounts(repository, { holder: 'h' } as unknown as OrgMeterLeases, thresholds, settings);
  return { sut, writes, emitOnce };
}

describe('MeterCounts', () => {
  it('keeps one pending row per org, day, meter and credential, and writes them all in one statement', async () => {
    const { sut, writes } = counts();
    sut.record(ORG, DAY, 'asks', 1, KEY, 'free', FREE);
    sut.record(ORG, DAY, 'asks', 2, KEY, 'free', FREE);
    sut.record(ORG, DAY, 'asks', 1, SYSTEM_ATTRIBUTION, 'free', FREE);
    sut.record(ORG, DAY, 'exports', 4, KEY, 'free', { ...FREE, exports: 9 });

    expect(sut.idle).toBe(false);
    await sut.flush();

    expect(sut.idle).toBe(true);
    expect(writes).toHaveLength(1);
    expect(writes[0].map((r) => [r.meter, r.by.kind, r.count, r.walletLimit, r.meterLimit])).toEqual([
      ['asks', 'api_key', 3, 100, null],
      ['exports', 'api_key', 4, 100, 9],
      ['asks', 'system', 1, 100, null],
    ]);
  });

  it('takes a refund out of what is pending; one already written is not its to give back', async () => {
    const { sut, writes } = counts();
    sut.record(ORG, DAY, 'captures', 2, KEY, 'free', FREE);

    expect(sut.unrecord(ORG, DAY, 'captures', 1, KEY)).toBe(true);
    expect(sut.unrecord(ORG, DAY, 'captures', 5, KEY)).toBe(false);
    await sut.flush();
    expect(sut.unrecord(ORG, DAY, 'captures', 1, KEY)).toBe(false);

    expect(writes.map((w) => w.map((r) => r.count))).toEqual([[1]]);
  });

  it('keeps the counts of a write the database could not take, and writes them with the next', async () => {
    let down = true;
    const { sut, writes } = counts({
      fail: () => (down ? Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) : null),
    });
    sut.record(ORG, DAY, 'asks', 3, KEY, 'free', FREE);
    await sut.flush();
    sut.record(ORG, DAY, 'asks', 1, KEY, 'free', FREE);

    down = false;
    await sut.flush();

    expect(writes.map((w) => w.map((r) => r.count))).toEqual([[4]]);
  });

  it('raises usage.threshold from the counted use the write returned, for each threshold it crossed', async () => {
    let counted = 0;
    const { sut, emitOnce } = counts({ counted: () => counted });
    sut.record(ORG, DAY, 'asks', 70, KEY, 'free', FREE);
    counted = 70;
    await sut.flush();
    sut.record(ORG, DAY, 'retrieves', 30, KEY, 'free', FREE);
    counted = 100;
    await sut.flush();

    expect(emitOnce.mock.calls.map(([, subject, mark]) => [subject, mark])).toEqual([
      [`${ORG}:mcp_queries:${DAY}`, '80'],
      [`${ORG}:mcp_queries:${DAY}`, '100'],
    ]);
    expect(emitOnce.mock.calls[0][3]).toMatchObject({ data: { meter: 'mcp_queries', used: 100, limit: 100 } });
  });
});
