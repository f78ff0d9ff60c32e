import type { RateWindow } from './plan-rate-limits.js';

/** A key's credit refill, as the API states it and the api_keys JSON column holds it. */
export interface CreditRefill {
  amount: number;
  interval: 'daily' | 'monthly';
  /** Monthly only: the day the refill happens (1-31; a shorter month refills on its last day). Default 1. */
  day_of_month?: number;
}

/**
 * What enforcement (budgets/) needs of a key, built once per verified row (and cached with it),
 * carried on the principal so a request reads nothing more: its own windows (null: none of its
 * own; the plan's apply either way), its credits (null: none), the networks it may be used from
 * (null: anywhere). Declared here so auth (which carries it) and budgets (which reads it) share it.
 */
export interface KeyLimits {
  windows: readonly RateWindow[] | null;
  credits: { refill: CreditRefill | null; epoch: number } | null;
  allows: ((ip: string) => boolean) | null;
}
