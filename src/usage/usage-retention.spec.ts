import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TestClock } from '../../test/support/clock.js';
import { PeriodicJobs } from '../common/periodic-jobs.js';
import { Settings } from '../settings/settings.js';
import type { UsageRepository } from './usage.repository.js';
import { UsageRetention } from './usage-retention.js';

function setup(pruneEveryMs: number, rowsPerTable = 0) {
  const calls: Array<{ table: string; before: string; batch: number }> = [];
  const left = {
    usage_counters: rowsPerTable,
    usage_attribution: rowsPerTable,
    usage_meter_counters: rowsPerTable,
    usage_meter_attribution: rowsPerTable,
  };
  const repo: Pick<UsageRepository, 'pruneBatch'> = {
    pruneBatch: async (table, before, batch) => {
      calls.push({ table, before, batch });
      const n = Math.min(batch, left[table]);
      left[table] -= n;
      return n;
    },
  };
  const settings = new Settings({
    session: { secret: 'x'.repeat(32) },
    clock: new TestClock('2026-11-23T12:00:00Z'),
    usage: { retentionDays: 10, pruneEveryMs },
  });
  const jobs = new PeriodicJobs();
  return { calls, left, jobs, retention: new UsageRetention(repo as UsageRepository, settings, jobs) };
}

describe('UsageRetention', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('deletes what is older than the window in bounded batches until a batch comes back short, deployment meters included', async () => {
    const { calls, left, retention } = setup(0, 25);

    const result = await retention.prune(10, 100);

    expect(result).toEqual({ counters: 50, attribution: 50 });
    expect(left).toEqual({
      usage_counters: 0,
      usage_attribution: 0,
      usage_meter_counters: 0,
      usage_meter_attribution: 0,
    });
    expect(calls.map((c) => c.table)).toEqual([
      ...Array<string>(3).fill('usage_attribution'),
      ...Array<string>(3).fill('usage_counters'),
      ...Array<string>(3).fill('usage_meter_attribution'),
      ...Array<string>(3).fill('usage_meter_counters'),
    ]);
    expect(new Set(calls.map((c) => c.before))).toEqual(new Set(['2026-11-14']));
  });

  it('stops after the per-run cap and leaves the rest for the next run', async () => {
    const { left, retention } = setup(0, 25);

    await retention.prune(10, 2);

    expect(left).toEqual({
      usage_counters: 5,
      usage_attribution: 5,
      usage_meter_counters: 5,
      usage_meter_attribution: 5,
    });
  });

  it('runs as the periodic job usage-retention every pruneEveryMs once the app has booted, and never when it is 0', async () => {
    const periodic = setup(1000);
    const never = setup(0);

    periodic.jobs.onApplicationBootstrap();
    never.jobs.onApplicationBootstrap();
    await vi.advanceTimersByTimeAsync(3500);
    await periodic.jobs.onModuleDestroy();
    const afterStop = periodic.calls.length;
    await vi.advanceTimersByTimeAsync(5000);

    expect(periodic.jobs.names).toEqual(['usage-retention']);
    expect(afterStop).toBe(12); // three runs, four tables each
    expect(periodic.calls).toHaveLength(afterStop);
    expect(never.calls).toEqual([]);
  });

  it('waits ten minutes after start before its first run when the interval is longer', async () => {
    const hourly = setup(3_600_000);
    hourly.jobs.onApplicationBootstrap();
    await vi.advanceTimersByTimeAsync(599_000);
    expect(hourly.calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(hourly.calls).toHaveLength(4);
    await hourly.jobs.onModuleDestroy();
  });
});
