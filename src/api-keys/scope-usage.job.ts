import { Injectable } from '@nestjs/common';
import { PeriodicJobs } from '../common/periodic-jobs.js';
import { ScopeUsageService } from './scope-usage.service.js';

const HOUR_MS = 3_600_000;

/** Deletes scope usage older than the 90 days a request may ask for, as the periodic job `scope-usage-retention` (hourly). */
@Injectable()
export class ScopeUsageJob {
  constructor(usage: ScopeUsageService, jobs: PeriodicJobs) {
    jobs.add({
      name: 'scope-usage-retention',
      everyMs: HOUR_MS,
      firstRunAfterMs: HOUR_MS / 3,
      run: () => usage.prune(),
    });
  }
}
