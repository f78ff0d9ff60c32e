import { Injectable, Optional } from '@nestjs/common';
import { OrgMeterLeases } from '../budgets/org-meter-leases.js';
import { epochMs, nextUtcMidnight, utcDay } from '../common/clock.js';
import { limitKeyOf, limitOf, UsageLimitExceededError, type Attribution } from '../common/meters.js';
import type { Plan } from '../common/roles.js';
import { ActivityEvents } from '../events/activity-events.js';
import { Settings } from '../settings/settings.js';
import { MeterCounts } from './meter-counts.js';
import type { ChargeResult } from './charge-result.js';

/**
 * The leased path of charging (USAGE_CHARGING=leased, the default): a charge takes its units from
 * this instance's block of the org's limit (budgets' OrgMeterLeases) and is counted in memory (MeterCounts,
 * written at least every second), so a charge the block covers costs no round trip and no
 * promise. A refund before the handler gives the units back to the block and takes them out of
 * the pending count: no database write, unless that count was already written.
 */
@Injectable()
export class LeasedCharges {
  /** The UTC day of the last charge and the instants it spans, computed once a day, not per request. */
  private day = '';
  private dayStart = 0;
  private dayEnd = 0;
  private resetsAt = new Date(0);
  private everCharged = false;

  constructor(
    private readonly leases: OrgMeterLeases,
    private readonly counts: MeterCounts,
    private readonly settings: Settings,
    @Optional() private readonly activity?: ActivityEvents,
  ) {}

  /** Charges `count` of `meter` (checked by the caller) to an org on `plan`; throws UsageLimitExceededError when the limit has no room. */
  charge(
    orgId: string,
    meter: string,
    count: number,
    plan: Plan,
    by: Attribution,
  ): ChargeResult | Promise<ChargeResult> {
    const t = epochMs(this.settings.clock);
    if (t < this.dayStart || t >= this.dayEnd) {
      const now = new Date(t);
      this.day = utcDay(now);
      this.resetsAt = nextUtcMidnight(now);
      this.dayEnd = this.resetsAt.getTime();
      this.dayStart = this.dayEnd - 86_400_000;
    }
    const { day, resetsAt } = this;
    const limits = this.settings.planLimits[plan];
    const key = limitKeyOf(meter);
    const taken = this.leases.take(orgId, day, key, limitOf(limits, meter), count);
    if (taken === true) return this.admitted(orgId, meter, count, day, plan, by, resetsAt);
    if (taken === false) throw this.refused(orgId, meter, count, plan, resetsAt);
    return taken.then((ok) => {
      if (!ok) throw this.refused(orgId, meter, count, plan, resetsAt);
      return this.admitted(orgId, meter, count, day, plan, by, resetsAt);
    });
  }

  /** Gives a charge back without a database write; false when its count was already written (give it back there). */
  refund(charge: ChargeResult): boolean {
    if (!this.counts.unrecord(charge.orgId, charge.day, charge.meter, charge.count, charge.by)) return false;
    this.leases.giveBack(charge.orgId, charge.day, limitKeyOf(charge.meter), charge.count);
    this.activity?.emit({ type: 'usage.refunded', meter: charge.meter, count: charge.count });
    return true;
  }

  /** Writes this instance's pending counts now; resolves at once when there are none. */
  settle(): Promise<void> {
    return this.counts.idle ? Promise.resolve() : this.counts.drain();
  }

  /** Nothing pending or being written. */
  get settled(): boolean {
    return this.counts.idle;
  }

  /** Whether this instance has charged anything since it started. */
  get charged(): boolean {
    return this.everCharged;
  }

  private admitted(
    orgId: string,
    meter: string,
    count: number,
    day: string,
    plan: Plan,
    by: Attribution,
    resetsAt: Date,
  ): ChargeResult {
    this.counts.record(orgId, day, meter, count, by, plan, this.settings.planLimits[plan]);
    this.everCharged = true;
    this.activity?.emit({ type: 'usage.charged', meter, count });
    return { orgId, meter, count, day, used: this.leases.taken(orgId, limitKeyOf(meter)), resetsAt, by };
  }

  private refused(orgId: string, meter: string, count: number, plan: Plan, resetsAt: Date): UsageLimitExceededError {
    this.activity?.emit({ type: 'usage.refused', meter, count });
    const limit = limitOf(this.settings.planLimits[plan], meter);
    const taken = this.leases.taken(orgId, limitKeyOf(meter));
    return new UsageLimitExceededError(meter, limit, limit === null ? taken : Math.min(taken, limit), count, resetsAt);
  }
}
