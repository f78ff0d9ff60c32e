import { Injectable } from '@nestjs/common';
import { PeriodicJobs } from '../common/periodic-jobs.js';
import { ApiKeysService } from './api-keys.service.js';

const HOUR_MS = 3_600_000;

/**
 * Clears rotated-out secrets whose grace has ended, as the periodic job `lapsed-previous-secrets`
 * (hourly, first run a quarter of an hour after start). Every read already ignores a lapsed
 * secret; this only stops storing its hash longer than it is of any use.
 */
@Injectable()
export class LapsedSecretsJob {
  constructor(keys: ApiKeysService, jobs: PeriodicJobs) {
    jobs.add({
      name: 'lapsed-previous-secrets',
      everyMs: HOUR_MS,
      firstRunAfterMs: HOUR_MS / 4,
      run: () => keys.clearLapsedPreviousSecrets(),
    });
  }
}
