import type { Attribution, Counters } from '../common/meters.js';

/** What a charge took, exact or leased (UsageService.charge's answer; what a refund gives back). */
export interface ChargeResult {
  orgId: string;
  /** One of the contract's meters or one the deployment defines. */
  meter: string;
  count: number;
  /** The UTC day (`YYYY-MM-DD`) whose counter was charged. */
  day: string;
  /**
   * Exact charging: the charged meter's count for the day after the charge. Leased charging: what
   * the meter's limit had taken (counted, and leased by every instance) when this instance last
   * leased a block of it, an upper bound of the count.
   */
  used: number;
  /** Exact charging: the day's counters of the contract's meters after the charge (leased: not known when charging). */
  counters?: Counters;
  resetsAt: Date;
  /** Who the charge is attributed to (what a refund gives back to). */
  by: Attribution;
}
