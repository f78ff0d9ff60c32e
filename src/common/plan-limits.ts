import { PLANS, type Plan } from './roles.js';

/** A daily limit; `null` means unlimited. */
export type Limit = number | null;

export interface MeterLimits {
  /** The query wallet: asks + retrieves together. */
  wallet: Limit;
  imports: Limit;
  captures: Limit;
  /** A deployment meter's limit, under the meter's name; a deployment meter not named here is unlimited. */
  [meter: string]: Limit;
}

export type PlanLimits = Record<Plan, MeterLimits>;

export const DEFAULT_PLAN_LIMITS: PlanLimits = {
  free: { wallet: 100, imports: 10, captures: 100 },
  pro: { wallet: null, imports: 1000, captures: 10000 },
};

const METER_KEYS = ['wallet', 'imports', 'captures'] as const;

/** The daily counters are PostgreSQL `integer`s: a larger limit could never be reached and would fail every charge. */
export const MAX_LIMIT = 2_147_483_647;

/**
 * Reads plan limits from untrusted JSON: every plan and meter is optional and falls back to
 * the default (unlimited for a deployment meter); anything else, a meter the deployment does not
 * define included, is refused with a message that names the offending path.
 */
export function parsePlanLimits(
  input: unknown,
  source = 'PLAN_LIMITS',
  deploymentMeters: readonly string[] = [],
): PlanLimits {
  const allowed = [...METER_KEYS, ...deploymentMeters];
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new Error(`${source} must be a JSON object like {"free":{"wallet":100}}`);
  }
  const result: PlanLimits = structuredClone(DEFAULT_PLAN_LIMITS);
  for (const [plan, meters] of Object.entries(input as Record<string, unknown>)) {
    if (!(PLANS as readonly string[]).includes(plan)) {
      throw new Error(`${source}: unknown plan "${plan}" (allowed: ${PLANS.join(', ')})`);
    }
    if (typeof meters !== 'object' || meters === null || Array.isArray(meters)) {
      throw new Error(`${source}.${plan} must be an object`);
    }
    for (const [meter, value] of Object.entries(meters)) {
      if (!allowed.includes(meter)) {
        throw new Error(`${source}.${plan}: unknown meter "${meter}" (allowed: ${allowed.join(', ')})`);
      }
      if (
        value !== null &&
        !(Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= MAX_LIMIT)
      ) {
        throw new Error(`${source}.${plan}.${meter} must be an integer from 0 to ${MAX_LIMIT}, or null (unlimited)`);
      }
      result[plan as Plan][meter] = value as Limit;
    }
  }
  return result;
}
