import { Injectable, Logger } from '@nestjs/common';
import { OrgMeterLeases } from '../budgets/org-meter-leases.js';
import { BatchedCounter } from '../common/batched-counter.js';
import { isDataError } from '../common/end-of-turn-loader.js';
import { isMeter, limitKeyOf, type Attribution } from '../common/meters.js';
import type { Limit, MeterLimits } from '../common/plan-limits.js';
import { Settings } from '../settings/settings.js';
import { MeterLeaseRepository, type MeterCount } from './meter-lease.repository.js';
import { UsageThresholds } from './usage-thresholds.js';

const DAY_MS = 86_400_000;

/**
 * What this instance charged from its blocks (USAGE_CHARGING=leased), per org, UTC day, meter and
 * credential, written behind the responses at least every second (BatchedCounter): one statement
 * adds the counts to the day's counters and the credentials' split and takes them out of this
 * instance's blocks (kui_count_meters), and `usage.threshold` follows from the counted use it
 * returns. A batch the database could not take is kept for the next write (one PostgreSQL refuses
 * as data is logged and dropped), except at shutdown, where what still cannot be written is logged.
 */
@Injectable()
export class MeterCounts extends BatchedCounter<MeterCount> {
  private readonly log = new Logger('MeterCounts');
  /** Per credential id, its pending rows: a credential charges few orgs and meters, so a short array. */
  private pending = new Map<string, MeterCount[]>();
  private closing = false;

  constructor(
    private readonly repository: MeterLeaseRepository,
    private readonly leases: OrgMeterLeases,
    private readonly thresholds: UsageThresholds,
    private readonly settings: Settings,
  ) {
    super('MeterCounts', (n) => `the meter counts of ${n} org-meter-credential(s)`);
  }

  record(
    orgId: string,
    day: string,
    meter: string,
    count: number,
    by: Attribution,
    plan: string,
    limits: MeterLimits,
  ): void {
    let rows = this.pending.get(by.credentialId);
    if (!rows) this.pending.set(by.credentialId, (rows = []));
    const row = find(rows, orgId, day, meter, by);
    const own: Limit = isMeter(meter) ? null : (limits[meter] ?? null);
    if (row) {
      row.count += count;
      if (row.plan !== plan) Object.assign(row, { plan, ...limitsOf(limits, own) });
      return;
    }
    rows.push({ orgId, day, meter, count, by, plan, ...limitsOf(limits, own) });
    this.grew(1);
  }

  /** Takes back `count` units not written yet; false when fewer are pending (they were written: give them back in the database). */
  unrecord(orgId: string, day: string, meter: string, count: number, by: Attribution): boolean {
    const rows = this.pending.get(by.credentialId);
    const row = rows && find(rows, orgId, day, meter, by);
    if (!row || row.count < count) return false;
    row.count -= count;
    return true;
  }

  protected take(): MeterCount[] {
    const rows: MeterCount[] = [];
    for (const list of this.pending.values()) for (const r of list) if (r.count > 0) rows.push(r);
    this.pending = new Map();
    return rows;
  }

  protected async write(rows: MeterCount[]): Promise<void> {
    if (rows.length === 0) return;
    let after: Awaited<ReturnType<MeterLeaseRepository['count']>>;
    try {
      after = await this.repository.count(rows, this.leases.holder);
    } catch (error) {
      if (!this.closing && !isDataError(error)) {
        for (const r of rows) this.record(r.orgId, r.day, r.meter, r.count, r.by, r.plan, limitsBack(r));
        this.log.warn(`kept ${rows.length} meter count(s) for the next write`);
      }
      throw error;
    }
    await this.noticeThresholds(rows, after);
  }

  override async onApplicationShutdown(): Promise<void> {
    this.closing = true;
    await super.onApplicationShutdown();
  }

  private async noticeThresholds(
    rows: MeterCount[],
    after: Array<{ orgId: string; day: string; meter: string; used: number }>,
  ) {
    for (const a of after) {
      let count = 0;
      let limit: Limit = null;
      for (const r of rows) {
        if (r.orgId.toLowerCase() !== a.orgId || r.day !== a.day || limitKeyOf(r.meter) !== a.meter) continue;
        count += r.count;
        limit =
          a.meter === 'wallet'
            ? r.walletLimit
            : a.meter === 'imports'
              ? r.importsLimit
              : a.meter === 'captures'
                ? r.capturesLimit
                : r.meterLimit;
      }
      if (!this.thresholds.crossed(a.used, count, limit)) continue;
      const resetsAt = new Date(Date.parse(a.day) + DAY_MS);
      await this.thresholds.notice(a.orgId, a.meter, a.used, count, limit, a.day, this.settings.clock.now(), resetsAt);
    }
  }
}

/** A plain loop: no closure per request. */
function find(rows: MeterCount[], orgId: string, day: string, meter: string, by: Attribution): MeterCount | undefined {
  for (const r of rows) if (r.orgId === orgId && r.meter === meter && r.day === day && r.by.kind === by.kind) return r;
  return undefined;
}

function limitsOf(limits: MeterLimits, own: Limit) {
  return { walletLimit: limits.wallet, importsLimit: limits.imports, capturesLimit: limits.captures, meterLimit: own };
}

function limitsBack(r: MeterCount): MeterLimits {
  const limits: MeterLimits = { wallet: r.walletLimit, imports: r.importsLimit, captures: r.capturesLimit };
  if (!isMeter(r.meter)) limits[r.meter] = r.meterLimit;
  return limits;
}
