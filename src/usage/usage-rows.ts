import type { Counters, CredentialKind } from '../common/meters.js';
import type { Limit, MeterLimits } from '../common/plan-limits.js';
import type { Plan } from '../common/roles.js';

/* The shapes of the usage history as UsageRepository reads it. */

/** What a deployment meter counted on a day, with the limit its last charge of the day was decided under. */
export type RecordedMeters = Record<string, { used: number; limit: Limit }>;

/** One UTC day of history: the counters, and the plan and limits recorded with them (null when nothing was charged). */
export interface DailyRow {
  day: string;
  counters: Counters;
  /** The day's plan: its contract meters' last charge's, else one its deployment meters were charged under. */
  plan: Plan | null;
  /** The contract meters' limits recorded with the day; null when none of them was charged. */
  limits: MeterLimits | null;
  /** The deployment meters charged that day (a meter not named here counted nothing). */
  meters: RecordedMeters;
}

/** One row of `usage export --by-key`. */
export interface AttributionRow {
  day: string;
  kind: CredentialKind;
  credentialId: string;
  userId: string | null;
  counters: Counters;
  /** What the credential charged of each deployment meter that day (named only when it charged one). */
  meters: Record<string, number>;
}

export interface RawDailyRow extends Counters {
  day: string;
  plan: Plan | null;
  wallet_limit: number | null;
  imports_limit: number | null;
  captures_limit: number | null;
  meters: RecordedMeters | null;
  meter_plan: Plan | null;
}

export const toDaily = (r: RawDailyRow): DailyRow => ({
  day: r.day,
  counters: { asks: r.asks, retrieves: r.retrieves, imports: r.imports, captures: r.captures },
  plan: r.plan ?? r.meter_plan,
  limits: r.plan ? { wallet: r.wallet_limit, imports: r.imports_limit, captures: r.captures_limit } : null,
  meters: r.meters ?? {},
});
