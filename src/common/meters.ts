import type { Limit, MeterLimits } from './plan-limits.js';

/** The contract's meters, stored as columns of the org's day; a deployment may define more (MeterRegistry). */
export const METERS = ['asks', 'retrieves', 'imports', 'captures'] as const;
export type Meter = (typeof METERS)[number];

/** One of the contract's four meters (a deployment's own meters are MeterRegistry's). */
export function isMeter(value: unknown): value is Meter {
  return typeof value === 'string' && (METERS as readonly string[]).includes(value);
}

/** The name of the limit a meter is checked against: asks and retrieves share the query wallet; any other meter has its own. */
export function limitKeyOf(meter: string): string {
  return meter === 'asks' || meter === 'retrieves' ? 'wallet' : meter;
}

/** The daily limit `meter` is checked against under a plan's limits; null = unlimited. */
export function limitOf(limits: MeterLimits, meter: string): Limit {
  return limits[limitKeyOf(meter)] ?? null;
}

export interface Counters {
  asks: number;
  retrieves: number;
  imports: number;
  captures: number;
}

/** Refused charge: recorded nothing. */
export class UsageLimitExceededError extends Error {
  constructor(
    readonly meter: string,
    readonly limit: Limit,
    readonly used: number,
    readonly requested: number,
    readonly resetsAt: Date,
  ) {
    const what = limitKeyOf(meter) === 'wallet' ? 'query wallet' : meter;
    super(
      (limit === null
        ? `Daily ${meter} capacity reached: ${used} used, `
        : `Daily ${what} limit reached: ${used} of ${limit} used, `) +
        `${requested} more requested; resets at ${resetsAt.toISOString()}`,
    );
    this.name = 'UsageLimitExceededError';
  }
}

export class UnknownOrgError extends Error {
  constructor(readonly orgId: string) {
    super('Organisation not found');
    this.name = 'UnknownOrgError';
  }
}

/** Who made a charge: an API key (by id), a session (by its user) or the system (host code, the CLI). */
export type CredentialKind = 'api_key' | 'session' | 'system';

export interface Attribution {
  kind: CredentialKind;
  /** The key's id, the session's user id, or the nil UUID for the system. */
  credentialId: string;
  /** The key's owner or the session's user; null for the system. */
  userId: string | null;
}

export const NIL_UUID = '00000000-0000-0000-0000-000000000000';
export const SYSTEM_ATTRIBUTION: Attribution = Object.freeze({ kind: 'system', credentialId: NIL_UUID, userId: null });
