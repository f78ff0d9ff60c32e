import { Injectable, Logger, Optional } from '@nestjs/common';
import { limitKeyOf } from '../common/meters.js';
import { EventOutbox } from '../events/event-outbox.js';

/** Percentages of a daily limit that raise `usage.threshold`. */
const THRESHOLDS = [80, 100] as const;
/** Whether use going from `before` to `after` reaches `threshold` % of `limit` for the first time. */
const crosses = (before: number, after: number, threshold: number, limit: number) =>
  before * 100 < threshold * limit && after * 100 >= threshold * limit;

/**
 * `usage.threshold` when a charge (exact path) or a count (leased path) took a daily limit's use
 * across 80 % or 100 %: once per org, meter and day (event_marks), whichever process counted.
 */
@Injectable()
export class UsageThresholds {
  private readonly logger = new Logger('UsageThresholds');

  constructor(@Optional() private readonly outbox?: EventOutbox) {}

  /** Whether `count` units that took `meter`'s use (or its limit's: the wallet for asks) to `used` crossed a threshold; checked synchronously. */
  crossed(used: number, count: number, limit: number | null): limit is number {
    return limit !== null && !!this.outbox?.enabled && THRESHOLDS.some((t) => crosses(used - count, used, t, limit));
  }

  /**
   * Writes the events of the thresholds crossed (`meter` is a meter or its limit's name); a failure
   * never fails the charge or the count (it is logged).
   */
  async notice(
    orgId: string,
    meter: string,
    used: number,
    count: number,
    limit: number,
    day: string,
    now: Date,
    resetsAt: Date,
  ): Promise<void> {
    const key = limitKeyOf(meter);
    const name = key === 'wallet' ? 'mcp_queries' : key;
    for (const threshold of THRESHOLDS) {
      if (!crosses(used - count, used, threshold, limit)) continue;
      try {
        await this.outbox!.emitOnce('usage_threshold', `${orgId}:${name}:${day}`, String(threshold), {
          orgId,
          type: 'usage.threshold',
          data: { org_id: orgId, meter: name, threshold, used, limit, day, resets_at: resetsAt.toISOString() },
          at: now,
        });
      } catch (error) {
        this.logger.warn(`usage.threshold for ${name} not recorded: ${(error as Error).message}`);
      }
    }
  }
}
