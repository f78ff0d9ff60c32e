/*
 * The names of a key's controls and who may have set each (the key record's `controls_set_by`).
 * What each may do with the other's is control-owners.ts; this file imports nothing, so the entity,
 * the record and its DTO can all name these types.
 */

export const CONTROLS = ['enabled', 'rate_limits', 'credits', 'allowed_cidrs', 'metadata'] as const;
export type ControlName = (typeof CONTROLS)[number];
/** `owner`: the key's owner (their own PATCH, or their mint); `admin`: an org owner or admin, or the operator. */
export type SetBy = 'owner' | 'admin';
export type ControlsSetBy = Partial<Record<ControlName, SetBy>>;
