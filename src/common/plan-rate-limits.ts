import { PLANS, type Plan } from './roles.js';

/** A rate window of a key, or of a plan (which applies to every key of the plan, in addition to its own). */
export interface RateWindow {
  name: string;
  limit: number;
  window_seconds: number;
}

/** Per plan, the windows every key of the plan is held to besides its own; null: none. */
export type PlanRateLimits = Record<Plan, RateWindow[] | null>;

/**
 * No default windows: a deployment turns them on with PLAN_RATE_LIMITS (for example
 * {"free":[{"name":"default","limit":10,"window_seconds":1}],"pro":[{"name":"default","limit":100,"window_seconds":1}]}).
 * Off by default so an upgrade changes no running key's answers.
 */
export const DEFAULT_PLAN_RATE_LIMITS: PlanRateLimits = { free: null, pro: null };

const NAME = /^[A-Za-z0-9_.:-]{1,32}$/;

/** Reads PLAN_RATE_LIMITS from untrusted JSON, naming the offending path. */
export function parsePlanRateLimits(input: unknown, source = 'PLAN_RATE_LIMITS'): PlanRateLimits {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new Error(`${source} must be a JSON object like {"free":[{"name":"default","limit":10,"window_seconds":1}]}`);
  }
  const result: PlanRateLimits = { ...DEFAULT_PLAN_RATE_LIMITS };
  for (const [plan, windows] of Object.entries(input)) {
    if (!(PLANS as readonly string[]).includes(plan))
      throw new Error(`${source}: unknown plan "${plan}" (allowed: ${PLANS.join(', ')})`);
    if (windows === null) continue;
    if (!Array.isArray(windows) || windows.length > 5)
      throw new Error(`${source}.${plan} must be null or an array of at most 5 windows`);
    result[plan as Plan] = windows.map((w: unknown, i) => {
      const at = `${source}.${plan}[${i}]`;
      const o = w as Partial<RateWindow> | null;
      if (typeof o !== 'object' || o === null || typeof o.name !== 'string' || !NAME.test(o.name))
        throw new Error(`${at}.name must be 1 to 32 letters, digits or _ . : -`);
      // A window's limit must be leasable (see budgets/key-settings.ts, MAX_WINDOW_LIMIT).
      if (!Number.isSafeInteger(o.limit) || o.limit! < 1 || o.limit! > 1_000_000_000)
        throw new Error(`${at}.limit must be an integer from 1 to 1000000000`);
      if (!Number.isSafeInteger(o.window_seconds) || o.window_seconds! < 1 || o.window_seconds! > 86_400)
        throw new Error(`${at}.window_seconds must be an integer from 1 to 86400`);
      return { name: o.name, limit: o.limit!, window_seconds: o.window_seconds! };
    });
  }
  return result;
}
