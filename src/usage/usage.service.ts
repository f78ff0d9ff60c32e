import { BadRequestException, Injectable, Logger, Optional } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import { nextUtcMidnight, utcDay } from '../common/clock.js';
import type { Plan } from '../common/roles.js';
import { ActivityEvents } from '../events/activity-events.js';
import { Settings } from '../settings/settings.js';
import { OrgDirectory } from '../directory/org-directory.js';
import {
  isMeter,
  limitKeyOf,
  limitOf,
  SYSTEM_ATTRIBUTION,
  UnknownOrgError,
  UsageLimitExceededError,
  type Attribution,
  type Counters,
} from '../common/meters.js';
import type { Limit, MeterLimits } from '../common/plan-limits.js';
import { LeasedCharges } from './leased-charges.js';
import { PendingRefunds } from './pending-refunds.js';
import { UsageThresholds } from './usage-thresholds.js';
import { UsageRepository } from './usage.repository.js';
import type { DailyRow, RecordedMeters } from './usage-rows.js';
import { usageSnapshotOf } from '../auth/usage-snapshot.js';
import type { DailyUsageDto } from './dto/daily-usage.dto.js';
import type { MeterDto, UsageMetersDto, UsageReportDto } from './dto/usage-report.dto.js';
import { ERRORS } from '../common/error-messages.js';
import type { ChargeResult } from './charge-result.js';

/** The response shapes are the DTO classes themselves (one class per shape). */
export type MeterReport = MeterDto;
export type UsageReport = UsageReportDto;
/** One UTC day of history, in the meter shapes of GET /usage, with the plan and limits that applied. */
export type DailyUsage = DailyUsageDto;

export type { ChargeResult };

/** The credential a principal charges as. */
export function attributionOf(principal: Principal): Attribution {
  return principal.kind !== 'session' && principal.keyId
    ? { kind: 'api_key', credentialId: principal.keyId, userId: principal.userId }
    : { kind: 'session', credentialId: principal.userId, userId: principal.userId };
}

const MAX_CHARGE = 1_000_000;
const NONE: RecordedMeters = {};

/**
 * Every meter of the deployment as `{ used, limit }`: the contract's from the day's counters under
 * `limits` (asks and retrieves show the wallet's limit, which they share), the deployment's as
 * `recorded` (what was charged and under which limit) or, for one not charged, 0 under `limits`.
 */
function metersOf(
  names: readonly string[],
  counters: Counters,
  limits: MeterLimits,
  recorded: RecordedMeters,
): UsageMetersDto {
  const meters: Record<string, MeterDto> = {};
  for (const name of names) {
    meters[name] = isMeter(name)
      ? { used: counters[name], limit: limitOf(limits, name) }
      : (recorded[name] ?? { used: 0, limit: limitOf(limits, name) });
  }
  return meters as UsageMetersDto;
}
/** The daily meters: read them (never charging) and charge them atomically. */
@Injectable()
export class UsageService {
  constructor(
    private readonly usage: UsageRepository,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
    @Optional() private readonly activity?: ActivityEvents,
    @Optional() private readonly pendingRefunds?: PendingRefunds,
    @Optional() private readonly thresholds?: UsageThresholds,
    /** The leased path (USAGE_CHARGING=leased); without it (a service built by hand) charges are exact. */
    @Optional() private readonly leased?: LeasedCharges,
  ) {}

  private readonly logger = new Logger(UsageService.name);

  async report(principal: Principal): Promise<UsageReport> {
    if (!principal.orgId || !principal.plan) {
      throw new BadRequestException(ERRORS.noOrgSelectedForSession);
    }
    // Leased charging: this instance's pending counts are written first, so its own charges show;
    // the verification's read may predate a write, so it serves only an instance that never charged.
    const leased = this.leasing ? this.leased! : undefined;
    if (leased && !leased.settled) await leased.settle();
    const now = this.settings.clock.now();
    const day = utcDay(now);
    // An API key's verification already read today's contract meters in the same statement.
    const snapshot = leased?.charged ? undefined : usageSnapshotOf(principal, day);
    const limits = this.settings.planLimits[principal.plan];
    const meters = this.settings.meters;
    let c: Counters;
    let recorded = NONE;
    if (meters.deployment.length === 0) c = snapshot ?? (await this.usage.read(principal.orgId, day));
    else {
      let own: Record<string, number>;
      [c, own] = await Promise.all([
        snapshot ?? this.usage.read(principal.orgId, day),
        this.usage.readMeters(principal.orgId, day),
      ]);
      recorded = Object.fromEntries(Object.entries(own).map(([m, used]) => [m, { used, limit: limitOf(limits, m) }]));
    }
    return {
      plan: principal.plan,
      mcp_queries: { used: c.asks + c.retrieves, limit: limits.wallet },
      breakdown: { asks: c.asks, retrieves: c.retrieves },
      imports: { used: c.imports, limit: limits.imports },
      captures: { used: c.captures, limit: limits.captures },
      resets_at: nextUtcMidnight(now).toISOString(),
      meters: metersOf(meters.names, c, limits, recorded),
    };
  }

  /**
   * Charges `count` units of `meter` (the contract's or one the deployment defines) to the org's
   * counter for the current UTC day, all or nothing, never past the limit across any number of
   * instances. Exact charging commits it before resolving; leased charging (the default) takes it
   * from this instance's block and writes it within a second (docs/usage.md, "Leased and exact
   * charging"; `settle()` waits for that write). Throws UsageLimitExceededError (nothing
   * recorded) when it would pass the limit, UnknownOrgError for an org the directory does not
   * know, RangeError for a meter the deployment does not define.
   *
   * `by`, the request's principal, attributes the charge to its API key or session user (in the
   * same statement); without it the charge is the system's. A principal of the same org also
   * brings the plan its verification read, which saves the directory round trip.
   */
  async charge(orgId: string, meter: string, count = 1, by?: Principal): Promise<ChargeResult> {
    return this.chargeNow(orgId, meter, count, by);
  }

  /**
   * `charge`, synchronous when it can be: on the leased path a charge this instance's block covers,
   * for a principal of the org (whose plan its verification read), returns its result, not a
   * promise (the `@Charges` hot path, UsageOrgMeter). Throws what `charge` rejects with.
   */
  chargeNow(orgId: string, meter: string, count = 1, by?: Principal): ChargeResult | Promise<ChargeResult> {
    if (!Number.isSafeInteger(count) || count < 1 || count > MAX_CHARGE) {
      throw new RangeError(`count must be an integer from 1 to ${MAX_CHARGE}`);
    }
    if (!this.settings.meters.has(meter)) {
      throw new RangeError(`meter must be one of ${this.settings.meters.names.join(', ')}; got "${meter}"`);
    }
    if (!this.leasing) return this.chargeExact(orgId, meter, count, by);
    const leased = this.leased!;
    if (by && by.orgId === orgId && by.plan) return leased.charge(orgId, meter, count, by.plan, attributionOf(by));
    return this.directory.orgPlan(orgId).then((plan) => {
      if (!plan) throw new UnknownOrgError(orgId);
      return leased.charge(orgId, meter, count, plan, SYSTEM_ATTRIBUTION);
    });
  }

  /** `charge` once written, with the day's counts after it as an exact charge answers them (the operator CLI prints them). */
  async settled(charge: ChargeResult): Promise<ChargeResult> {
    if (charge.counters) return charge;
    await this.settle();
    const counters = await this.usage.read(charge.orgId, charge.day);
    const used = isMeter(charge.meter)
      ? counters[charge.meter]
      : ((await this.usage.readMeters(charge.orgId, charge.day))[charge.meter] ?? 0);
    return { ...charge, counters, used };
  }

  /** Whether charges go through instance leases (USAGE_CHARGING=leased). */
  private get leasing(): boolean {
    return this.leased !== undefined && this.settings.usageCharging === 'leased';
  }

  /**
   * Writes this instance's pending counts (leased charging) and resolves once the database has
   * them and every refund being written: what a test or a host that reads the tables right after
   * charging waits for (the exact path commits every charge before it resolves).
   */
  async settle(): Promise<void> {
    await this.pendingRefunds?.settled();
    if (this.leasing) await this.leased!.settle();
  }

  /** The exact path: one atomic upsert per charge (batched per event-loop turn), committed before it resolves. */
  private async chargeExact(orgId: string, meter: string, count: number, by?: Principal): Promise<ChargeResult> {
    const sameOrg = by && by.orgId === orgId && by.plan ? by : undefined;
    const plan = sameOrg?.plan ?? (await this.directory.orgPlan(orgId));
    if (!plan) throw new UnknownOrgError(orgId);
    const attribution = sameOrg ? attributionOf(sameOrg) : SYSTEM_ATTRIBUTION;
    const now = this.settings.clock.now();
    const day = utcDay(now);
    const limits = this.settings.planLimits[plan];
    const limit = limitOf(limits, meter);
    const resetsAt = nextUtcMidnight(now);
    let counters: Counters;
    let used: number;
    if (isMeter(meter)) {
      const after = await this.usage.charge({ orgId, day, meter, count, limit, plan, limits, by: attribution });
      if (!after) throw await this.refused(orgId, day, meter, count, limit, resetsAt);
      counters = after;
      used = after[meter];
    } else {
      // A deployment's meter: its own row and statement (UsageRepository.chargeMeter).
      const after = await this.usage.chargeMeter({ orgId, day, meter, count, limit, plan, by: attribution });
      if (!after) throw await this.refused(orgId, day, meter, count, limit, resetsAt);
      ({ counters, used } = after);
    }
    this.activity?.emit({ type: 'usage.charged', meter, count });
    // Checked here, synchronously: a charge that crosses no threshold (nearly all) costs no await.
    const spent = limitKeyOf(meter) === 'wallet' ? counters.asks + counters.retrieves : used;
    if (this.thresholds?.crossed(spent, count, limit)) {
      await this.thresholds.notice(orgId, meter, spent, count, limit, day, now, resetsAt);
    }
    return { orgId, meter, count, day, used, counters, resetsAt, by: attribution };
  }

  /** The error of a refused charge, with what the limit found used (recorded nothing). */
  private async refused(
    orgId: string,
    day: string,
    meter: string,
    count: number,
    limit: Limit,
    resetsAt: Date,
  ): Promise<UsageLimitExceededError> {
    this.activity?.emit({ type: 'usage.refused', meter, count });
    let used: number;
    if (isMeter(meter)) {
      const current = await this.usage.read(orgId, day);
      // Unlimited: refused only because the meter's own counter is full.
      used = limit !== null && limitKeyOf(meter) === 'wallet' ? current.asks + current.retrieves : current[meter];
    } else used = (await this.usage.readMeters(orgId, day))[meter] ?? 0;
    return new UsageLimitExceededError(meter, limit, used, count, resetsAt);
  }

  /**
   * Gives back a charge whose work then failed (one statement), on the day it was made, so a
   * request that was refused after being charged does not spend the meter.
   */
  async refund(charge: ChargeResult): Promise<void> {
    if (this.leasing && this.leased!.refund(charge)) return;
    await this.usage.refund(charge.orgId, charge.day, charge.meter, charge.count, charge.by ?? SYSTEM_ATTRIBUTION);
    this.activity?.emit({ type: 'usage.refunded', meter: charge.meter, count: charge.count });
  }

  /**
   * The same, but a refund that cannot reach the database now is kept and retried until it
   * lands (bounded; see PendingRefunds). Resolves once it landed or was kept.
   */
  refundEventually(charge: ChargeResult): Promise<void> {
    if (this.leasing && this.leased!.refund(charge)) return Promise.resolve();
    const { orgId, day, meter, count } = charge;
    const by = charge.by ?? SYSTEM_ATTRIBUTION;
    return this.pendingRefunds ? this.pendingRefunds.refund({ orgId, day, meter, count, by }) : this.refund(charge);
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
        // A deployment meter not charged that day shows the limit of the day's plan as configured now.
        meters: metersOf(this.settings.meters.names, c, { ...this.settings.planLimits[plan], ...limits }, r.meters),
      };
    });
  }
}
