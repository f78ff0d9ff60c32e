import type { KeyLimits } from '../common/key-limits.js';
import { cidrMatcher, type CreditRefill, type RateWindow } from './key-settings.js';

export type { KeyLimits };

export interface KeyLimitColumns {
  rate_limits: RateWindow[] | null;
  has_credits: boolean | null;
  credits_refill: CreditRefill | null;
  credits_epoch: number | null;
  allowed_cidrs: string[] | null;
}

/** Null when the key sets none of them: the common case costs one comparison per request. */
export function keyLimitsOf(c: KeyLimitColumns): KeyLimits | null {
  if (!c.rate_limits && !c.has_credits && !c.allowed_cidrs) return null;
  return {
    windows: c.rate_limits ?? null,
    credits: c.has_credits ? { refill: c.credits_refill ?? null, epoch: c.credits_epoch ?? 0 } : null,
    allows: c.allowed_cidrs ? cidrMatcher(c.allowed_cidrs) : null,
  };
}
