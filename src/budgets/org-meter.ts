import type { Principal } from '../auth/principal.js';

/** What a charge of the org's meter took: opaque to budgets, handed back to `giveBack`. */
export type MeterCharge = object;

/**
 * The org's daily meters as SpendGuard spends them: a port that budgets declares and usage
 * implements (the library root binds the one to the other), so budgets never imports usage.
 */
export abstract class OrgMeter {
  /**
   * Charges `count` units of `meter` to the principal's org, all or nothing: synchronously when it
   * can be (a leased block covers it), else a promise. Throws (or rejects with) the refusal as the
   * answer to send: 429 (`TooManyRequests`, `Retry-After` written on `response`) for a spent meter,
   * 400 without an org, 404 for an unknown org, 503 with the database away.
   */
  abstract charge(
    principal: Principal,
    meter: string,
    count: number,
    response: unknown,
  ): MeterCharge | Promise<MeterCharge>;

  /** Gives a charge back; never throws (a refund the database cannot take now is kept and retried). */
  abstract giveBack(charge: MeterCharge): void;
}
