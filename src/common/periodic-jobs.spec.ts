import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PeriodicJobs } from './periodic-jobs.js';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe('PeriodicJobs', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('runs each job first after its delay, then every interval, and stops when the app closes', async () => {
    const jobs = new PeriodicJobs();
    const run = vi.fn(async () => 0);
    jobs.add({ name: 'a', everyMs: 1000, firstRunAfterMs: 300, run });

    await vi.advanceTimersByTimeAsync(5000);
    expect(run, 'nothing before the app has booted').not.toHaveBeenCalled();
    jobs.onApplicationBootstrap();
    await vi.advanceTimersByTimeAsync(299);
    expect(run).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(run).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(2000);
    expect(run).toHaveBeenCalledTimes(3);
    await jobs.onModuleDestroy();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(run).toHaveBeenCalledTimes(3);
  });

  it('never runs a job whose interval is 0, and caps the first delay at the interval', async () => {
    const jobs = new PeriodicJobs();
    const never = vi.fn(async () => 0);
    const soon = vi.fn(async () => 0);
    jobs.add({ name: 'never', everyMs: 0, firstRunAfterMs: 10, run: never });
    jobs.add({ name: 'soon', everyMs: 100, firstRunAfterMs: 60_000, run: soon });
    jobs.onApplicationBootstrap();
    await vi.advanceTimersByTimeAsync(100);
    expect([never.mock.calls.length, soon.mock.calls.length]).toEqual([0, 1]);
    await jobs.onModuleDestroy();
  });

  it('never overlaps runs of one job: a tick that finds it running is skipped, and closing waits for it', async () => {
    const jobs = new PeriodicJobs();
    const slow = deferred();
    const run = vi.fn(() => slow.promise);
    jobs.add({ name: 'slow', everyMs: 100, firstRunAfterMs: 100, run });
    jobs.onApplicationBootstrap();
    await vi.advanceTimersByTimeAsync(550);
    expect(run).toHaveBeenCalledTimes(1);

    let closed = false;
    const closing = jobs.onModuleDestroy().then(() => (closed = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(closed).toBe(false);
    slow.resolve();
    await closing;
    expect(closed).toBe(true);
  });

  it('logs a failed run and tries again at the next tick', async () => {
    const jobs = new PeriodicJobs();
    const run = vi.fn().mockRejectedValueOnce(new Error('database down')).mockResolvedValue(3);
    jobs.add({ name: 'flaky', everyMs: 100, firstRunAfterMs: 100, run });
    jobs.onApplicationBootstrap();
    await vi.advanceTimersByTimeAsync(200);
    expect(run).toHaveBeenCalledTimes(2);
    await jobs.onModuleDestroy();
  });

  it('schedules a job added after start, runs one on demand, and runs a job registered twice (a module built twice) once', async () => {
    const jobs = new PeriodicJobs();
    jobs.onApplicationBootstrap();
    const run = vi.fn(async () => 0);
    jobs.add({ name: 'late', everyMs: 100, firstRunAfterMs: 50, run });
    await vi.advanceTimersByTimeAsync(50);
    expect(run).toHaveBeenCalledTimes(1);
    await jobs.runNow('late');
    expect(run).toHaveBeenCalledTimes(2);
    const copy = vi.fn(async () => 0);
    jobs.add({ name: 'late', everyMs: 100, firstRunAfterMs: 50, run: copy });
    await vi.advanceTimersByTimeAsync(300);
    expect(jobs.names).toEqual(['late']);
    expect(copy).not.toHaveBeenCalled();
    expect(run).toHaveBeenCalledTimes(5);
    await jobs.onModuleDestroy();
  });
});
