import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { utcDay } from '../common/clock.js';
import { Settings } from '../settings/settings.js';
import { oldestKeptDay } from './day-range.js';
import { UsageRepository } from './usage.repository.js';

const BATCH = 5000;
/** One run deletes at most this many batches per table; what is left waits for the next run. */
const MAX_BATCHES_PER_RUN = 200;

/**
 * Keeps `retentionDays` days of usage history: every `pruneEveryMs` (first run ten minutes after
 * start, so short-lived processes and restarts do not all prune at once) it deletes older rows in bounded batches, each its own short statement, so pruning
 * never holds a lock or a connection for long (the embedded database has only one).
 */
@Injectable()
export class UsageRetention implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('UsageRetention');
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;

  constructor(
    private readonly usage: UsageRepository,
    private readonly settings: Settings,
  ) {}

  onApplicationBootstrap(): void {
    const every = this.settings.usagePruneEveryMs;
    if (every <= 0) return;
    const tick = () => {
      this.running ??= this.prune()
        .catch((error: unknown) => this.logger.warn(`pruning usage history failed: ${(error as Error).message}`))
        .finally(() => (this.running = null));
      this.timer = setTimeout(tick, every).unref();
    };
    this.timer = setTimeout(tick, Math.min(every, 600_000)).unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Deletes history older than the retention window; returns the rows deleted per table. */
  async prune(batch = BATCH, maxBatches = MAX_BATCHES_PER_RUN): Promise<{ counters: number; attribution: number }> {
    const before = oldestKeptDay(utcDay(this.settings.clock.now()), this.settings.usageRetentionDays);
    const result = { counters: 0, attribution: 0 };
    for (const [table, field] of [['usage_attribution', 'attribution'], ['usage_counters', 'counters']] as const) {
      for (let i = 0; i < maxBatches; i++) {
        const n = await this.usage.pruneBatch(table, before, batch);
        result[field] += n;
        if (n < batch) break;
      }
    }
    return result;
  }
}
