import { Injectable } from '@nestjs/common';
import { utcDay } from '../common/clock.js';
import { PeriodicJobs } from '../common/periodic-jobs.js';
import { Settings } from '../settings/settings.js';
import { oldestKeptDay } from '../common/day-range.js';
import { UsageRepository } from './usage.repository.js';

const BATCH = 5000;
/** One run deletes at most this many batches per table; what is left waits for the next run. */
const MAX_BATCHES_PER_RUN = 200;
/** The first run comes ten minutes after start (or one interval, if shorter), so restarts do not all prune at once. */
const FIRST_RUN_AFTER_MS = 600_000;

/**
 * Keeps `retentionDays` days of usage history. Runs as the periodic job `usage-retention` every
 * `pruneEveryMs` (0: never on its own; a host may then call `prune()` from its own scheduler),
 * deleting older rows in bounded batches, each its own short statement.
 */
@Injectable()
export class UsageRetention {
  constructor(
    private readonly usage: UsageRepository,
    private readonly settings: Settings,
    jobs: PeriodicJobs,
  ) {
    jobs.add({
      name: 'usage-retention',
      everyMs: settings.usagePruneEveryMs,
      firstRunAfterMs: FIRST_RUN_AFTER_MS,
      run: async () => {
        const { counters, attribution } = await this.prune();
        return counters + attribution;
      },
    });
  }

  /** Deletes history older than the retention window; returns the rows deleted per table. */
  async prune(batch = BATCH, maxBatches = MAX_BATCHES_PER_RUN): Promise<{ counters: number; attribution: number }> {
    const before = oldestKeptDay(utcDay(this.settings.clock.now()), this.settings.usageRetentionDays);
    const result = { counters: 0, attribution: 0 };
    // The deployment meters' rows count with the contract meters' rows of the same kind.
    for (const [table, field] of [
      ['usage_attribution', 'attribution'],
      ['usage_counters', 'counters'],
      ['usage_meter_attribution', 'attribution'],
      ['usage_meter_counters', 'counters'],
    ] as const) {
      for (let i = 0; i < maxBatches; i++) {
        const n = await this.usage.pruneBatch(table, before, batch);
        result[field] += n;
        if (n < batch) break;
      }
    }
    return result;
  }
}
