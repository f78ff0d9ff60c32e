/**
 * The ranges of the policy's day counts, one source for the PUT body's rules (dto/key-policy.dto.ts)
 * and the operator CLI's flags (which load no Nest or validation library before they run).
 */
export const MAX_LIFETIME_DAYS = { min: 1, max: 366 } as const;
export const STALE_AFTER_DAYS = { min: 30, max: 730 } as const;
