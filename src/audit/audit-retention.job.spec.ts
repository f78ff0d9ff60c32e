import { afterEach, describe, expect, it, vi } from 'vitest';
import { PeriodicJobs } from '../common/periodic-jobs.js';
import { AUDIT_PRUNE_INTERVAL_MS, AuditRetentionJob } from './audit-retention.job.js';
import type { AuditService } from './audit.service.js';

function setup(prune: AuditService['prune']) {
  const jobs = new PeriodicJobs();
  const audit: Pick<AuditService, 'prune'> = { prune };
  new AuditRetentionJob(audit as AuditService, jobs);
  return jobs;
}

describe('AuditRetentionJob', () => {
  afterEach(() => vi.useRealTimers());

  it('prunes through the periodic jobs a minute after start, then every interval, and stops when the app closes', async () => {
    vi.useFakeTimers();
    const prune = vi.fn(async () => 0);
    const jobs = setup(prune);
    jobs.onApplicationBootstrap();
    expect(jobs.names).toEqual(['audit-retention']);
    await vi.advanceTimersByTimeAsync(59_000);
    expect(prune).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(prune).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(AUDIT_PRUNE_INTERVAL_MS);
    expect(prune).toHaveBeenCalledTimes(2);
    await jobs.onModuleDestroy();
    await vi.advanceTimersByTimeAsync(3 * AUDIT_PRUNE_INTERVAL_MS);
    expect(prune).toHaveBeenCalledTimes(2);
  });

  it('survives a failed run and tries again at the next tick', async () => {
    vi.useFakeTimers();
    const prune = vi.fn().mockRejectedValueOnce(new Error('database down')).mockResolvedValue(3);
    const jobs = setup(prune);
    jobs.onApplicationBootstrap();
    await vi.advanceTimersByTimeAsync(60_000 + AUDIT_PRUNE_INTERVAL_MS);
    expect(prune).toHaveBeenCalledTimes(2);
    await jobs.onModuleDestroy();
  });
});
