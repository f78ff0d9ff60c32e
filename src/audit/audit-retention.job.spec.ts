import { afterEach, describe, expect, it, vi } from 'vitest';
import { AUDIT_PRUNE_INTERVAL_MS, AuditRetentionJob } from './audit-retention.job.js';
import type { AuditService } from './audit.service.js';

describe('AuditRetentionJob', () => {
  afterEach(() => vi.useRealTimers());

  it('prunes a minute after start, then every interval, and stops when the module is destroyed', async () => {
    vi.useFakeTimers();
    const prune = vi.fn(async () => 0);
    const job = new AuditRetentionJob({ prune } as unknown as AuditService);
    job.onApplicationBootstrap();
    await vi.advanceTimersByTimeAsync(59_000);
    expect(prune).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(prune).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(AUDIT_PRUNE_INTERVAL_MS);
    expect(prune).toHaveBeenCalledTimes(2);
    await job.onModuleDestroy();
    await vi.advanceTimersByTimeAsync(3 * AUDIT_PRUNE_INTERVAL_MS);
    expect(prune).toHaveBeenCalledTimes(2);
  });

  it('survives a failed run and tries again at the next tick', async () => {
    vi.useFakeTimers();
    const prune = vi.fn().mockRejectedValueOnce(new Error('database down')).mockResolvedValue(3);
    const job = new AuditRetentionJob({ prune } as unknown as AuditService);
    job.onApplicationBootstrap();
    await vi.advanceTimersByTimeAsync(60_000 + AUDIT_PRUNE_INTERVAL_MS);
    expect(prune).toHaveBeenCalledTimes(2);
    await job.onModuleDestroy();
  });
});
