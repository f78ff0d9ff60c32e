import { Injectable } from '@nestjs/common';
import { PeriodicJobs } from '../common/periodic-jobs.js';
import { VerificationOutcomesService } from './verification-outcomes.service.js';

const HOUR_MS = 3_600_000;

/**
 * Deletes hourly verification outcomes older than 90 days and daily ones older than usage history,
 * as the periodic job `verification-outcomes-retention` (hourly).
 */
@Injectable()
export class VerificationOutcomesJob {
  constructor(outcomes: VerificationOutcomesService, jobs: PeriodicJobs) {
    jobs.add({
      name: 'verification-outcomes-retention',
      everyMs: HOUR_MS,
      firstRunAfterMs: HOUR_MS / 4,
      run: () => outcomes.prune(),
    });
  }
}
