import { BadRequestException, Injectable, Logger, Optional } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import { nextUtcMidnight, utcDay } from '../common/clock.js';
import type { Plan } from '../common/roles.js';
import { ActivityEvents } from '../events/activity-events.js';
import { Settings } from '../settings/settings.js';
import { OrgDirectory } from '../directory/org-directory.js';
import {
  limitKeyOf,
  SYSTEM_ATTRIBUTION,
  UnknownOrgError,
  UsageLimitExceededError,
  type Attribution,
  type Counters,
  type Meter,
} from '../common/meters.js';
import { EventOutbox } from '../events/event-outbox.js';
import { PendingRefunds } from './pending-refunds.js';
import { UsageRepository, type DailyRow } from './usage.repository.js';
import { usageSnapshotOf } from '../auth/usage-snapshot.js';
import type { DailyUsageDto } from './dto/daily-usage.dto.js';
import type { MeterDto, UsageReportDto } from './dto/usage-report.dto.js';
import { ERRORS } from '../common/error-messages.js';

/** The response shapes are the DTO classes themselves (one class per shape). */
export type MeterReport = MeterDto;
export type UsageReport = UsageReportDto;
/** One UTC day of history, in the meter shapes of GET /usage, with the plan and limits that applied. */
export type DailyUsage = DailyUsageDto;

export interface ChargeResult {
  orgId: string;
  meter: Meter;
  count: number;
  /** The UTC day (`YYYY-MM-DD`) whose counter was charged. */
  day: string;
  /** The day's counters after the charge. */
  counters: Counters;
  resetsAt: Date;
  /** Who the charge is attributed to (what a refund gives back to). */
  by: Attribution;
}

/** The credential a principal charges as. */
export function attributionOf(principal: Principal): Attribution {
  return principal.kind !== 'session' && principal.keyId
    ? { kind: 'api_key', credentialId: principal.keyId, userId: principal.userId }
    : { kind: 'session', credentialId: principal.userId, userId: principal.userId };
}

const MAX_CHARGE = 1_000_000;
/** Percentages of a daily limit that raise `usage.threshold`. */
const THRESHOLDS = [80, 100] as const;
/** Whether use going from `before` to `after` reaches `threshold` % of `limit` for the first time. */
const crosses = (before: number, after: number, threshold: number, limit: number) =>
  before * 100 < threshold * limit && after * 100 >= threshold * limit;

/** The daily meters: read them (never charging) and charge them atomically. */
@Injectable()
export class UsageService {
  constructor(
    private readonly usage: UsageRepository,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
    @Optional() private readonly activity?: ActivityEvents,
    @Optional() private readonly pendingRefunds?: PendingRefunds,
    @Optional() private readonly outbox?: EventOutbox,
  ) {}

  private readonly logger = new Logger(UsageService.name);

  async report(principal: Principal): Promise<UsageReport> {
    if (!principal.orgId || !principal.plan) {
      throw new BadRequestException(ERRORS.noOrgSelectedForSession);
    }
    const now = this.settings.clock.now();
    const day = utcDay(now);
    // An API key's verification already read today's meters in the same statement.
    const c = usageSnapshotOf(principal, day) ?? (await this.usage.read(principal.orgId, day));
    const limits = this.settings.planLimits[principal.plan];
    return {
      plan: principal.plan,
      mcp_queries: { used: c.asks + c.retrieves, limit: limits.wallet },
      breakdown: { asks: c.asks, retrieves: c.retrieves },
      imports: { used: c.imports, limit: limits.imports },
      captures: { used: c.captures, limit: limits.captures },
      resets_at: nextUtcMidnight(now).toISOString(),
    };
  }

  /**
   * Charges `count` units of `meter` to the org's counter for the current UTC day, all or
   * nothing. Throws UsageLimitExceededError (nothing recorded) when it would pass the limit,
   * UnknownOrgError for an org the directory does not know.
   *
   * `by`, the request's principal, attributes the charge to its API key or session user (in the
   * same statement); without it the charge is the system's. A principal of the same org also
   * brings the plan its verification read, which saves the directory round trip.
   */
  async charge(orgId: string, meter: Meter, count = 1, by?: Principal): Promise<ChargeResult> {
    if (!Number.isSafeInteger(count) || count < 1 || count > MAX_CHARGE) {
      throw new RangeError(`count must be an integer from 1 to ${MAX_CHARGE}`);
    }
    const sameOrg = by && by.orgId === orgId && by.plan ? by : undefined;
    const plan = sameOrg?.plan ?? (await this.directory.orgPlan(orgId));
    if (!plan) throw new UnknownOrgError(orgId);
    const attribution = sameOrg ? attributionOf(sameOrg) : SYSTEM_ATTRIBUTION;
    const now = this.settings.clock.now();
    const day = utcDay(now);
    const limits = this.settings.planLimits[plan];
    const limit = limits[limitKeyOf(meter)];
    const resetsAt = nextUtcMidnight(now);
    const counters = await this.usage.charge({ orgId, day, meter, count, limit, plan, limits, by: attribution });
    if (!counters) {
      this.activity?.emit({ type: 'usage.refused', meter, count });
      const current = await this.usage.read(orgId, day);
      // Unlimited: refused only because the meter's own counter is full.
      const used = limit !== null && limitKeyOf(meter) === 'wallet' ? current.asks + current.retrieves : current[meter];
      throw new UsageLimitExceededError(meter, limit, used, count, resetsAt);
    }
    this.activity?.emit({ type: 'usage.charged', meter, count });
    // Checked here, synchronously: a charge that crosses no threshold (nearly all) costs no await.
    if (this.outbox?.enabled && limit !== null) {
      const used = limitKeyOf(meter) === 'wallet' ? counters.asks + counters.retrieves : counters[meter];
      if (THRESHOLDS.some((t) => crosses(used - count, used, t, limit))) {
        await this.noticeThresholds(orgId, meter, used, count, limit, day, now, resetsAt);
      }
    }
    return { orgId, meter, count, day, counters, resetsAt, by: attribution };
  }

  /**
   * `usage.threshold` when this charge took a daily limit's use across 80 % or 100 %: once per
   * org, meter and day (event_marks), whichever process charged. Only a crossing costs a statement;
   * a failure to write the event never fails the charge (it is logged).
   */
  private async noticeThresholds(
    orgId: string,
    meter: Meter,
    used: number,
    count: number,
    limit: number,
    day: string,
    now: Date,
    resetsAt: Date,
  ): Promise<void> {
    const key = limitKeyOf(meter);
    const before = used - count;
    const name = key === 'wallet' ? 'mcp_queries' : key;
    for (const threshold of THRESHOLDS) {
      if (!crosses(before, used, threshold, limit)) continue;
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

  /**
   * Gives back a charge whose work then failed (one statement), on the day it was made, so a
   * request that was refused after being charged does not spend the meter.
   */
  async refund(charge: ChargeResult): Promise<void> {
    await this.usage.refund(charge.orgId, charge.day, charge.meter, charge.count, charge.by ?? SYSTEM_ATTRIBUTION);
    this.activity?.emit({ type: 'usage.refunded', meter: charge.meter, count: charge.count });
  }

  /**
   * The same, but a refund that cannot reach the database now is kept and retried until it
   * lands (bounded; see PendingRefunds). Resolves once it landed or was kept.
   */
  refundEventually(charge: ChargeResult): Promise<void> {
    if (!this.pendingRefunds) return this.refund(charge);
    return this.pendingRefunds.refund({
      orgId: charge.orgId,
      day: charge.day,
      meter: charge.meter,
      count: charge.count,
      by: charge.by ?? SYSTEM_ATTRIBUTION,
    });
  }

  /**
   * Turns history rows into the report's day entries: a day without charges shows the
   * `fallback` plan (the org's current one) and its limits; a charged day shows what its last
   * charge was decided under.
   */
  toDailyUsage(rows: DailyRow[], fallback: Plan): DailyUsage[] {
    return rows.map((r) => {
      const plan = r.plan ?? fallback;
      const limits = r.limits ?? this.settings.planLimits[plan];
      const c = r.counters;
      return {
        day: r.day,
        plan,
        mcp_queries: { used: c.asks + c.retrieves, limit: limits.wallet },
        breakdown: { asks: c.asks, retrieves: c.retrieves },
        imports: { used: c.imports, limit: limits.imports },
        captures: { used: c.captures, limit: limits.captures },
      };
    });
  }
}
