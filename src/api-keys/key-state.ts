/**
 * A key's state, the one rule: revoked wins over expired, expired over disabled; a key that is
 * none of them is active. The list filters (`?state=`) and the org admins' `state` field use
 * keyStateSql; rotation and the active-key cap use activeKeySql, for which a disabled key still
 * counts (it keeps its place and can be enabled again).
 */
export const KEY_STATES = ['active', 'revoked', 'expired', 'disabled'] as const;
export type KeyState = (typeof KEY_STATES)[number];

const revoked = (alias: string) => `${alias}.revoked_at IS NOT NULL`;
const expired = (alias: string, now: string) => `(${alias}.expires_at IS NOT NULL AND ${alias}.expires_at <= ${now}::timestamptz)`;

/** The state of the api_keys row aliased `alias`, judged at the timestamptz `now` (an SQL expression, e.g. `$2`). */
export function keyStateSql(alias: string, now: string): string {
  return `(CASE WHEN ${revoked(alias)} THEN 'revoked' WHEN ${expired(alias, now)} THEN 'expired' WHEN NOT ${alias}.enabled THEN 'disabled' ELSE 'active' END)`;
}

/**
 * Neither revoked nor expired (active or disabled) as a plain condition, which PostgreSQL turns into
 * `revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now)`: the cap's counts stay
 * index-only scans of the partial index api_keys_active_owner_idx.
 */
export function activeKeySql(alias: string, now: string): string {
  return `(NOT ${revoked(alias)} AND NOT ${expired(alias, now)})`;
}
