import { Injectable } from '@nestjs/common';
import { PeriodicJobs } from '../common/periodic-jobs.js';
import { AuditService } from './audit.service.js';

/** How often the retention job runs; each run deletes in bounded batches (see AuditService.prune). */
export const AUDIT_PRUNE_INTERVAL_MS = 60 * 60 * 1000;
const FIRST_RUN_AFTER_MS = 60 * 1000;

/**
 * Prunes audit events past AUDIT_RETENTION_DAYS as the periodic job `audit-retention`: once an
 * hour, the first run a minute after start. Several replicas pruning at once skip each other's rows.
 */
@Injectable()
export class AuditRetentionJob {
  constructor(audit: AuditService, jobs: PeriodicJobs) {
    jobs.add({
      name: 'audit-retention',
      everyMs: AUDIT_PRUNE_INTERVAL_MS,
      firstRunAfterMs: FIRST_RUN_AFTER_MS,
      run: () => audit.prune(),
    });
  }
}
