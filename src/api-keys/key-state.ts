/**
 * A key's state, the one rule: denied (an admin refused its approval) wins, then revoked, then
 * pending (awaiting an admin's approval under the org's key policy), then expired, then disabled;
 * a key that is none of these is active. The list filters (`?state=`), the org admins' `state`
 * field, rotation and the active-key cap all use the SQL below, every record's `state` the
 * function beside it, so a new state is added here and nowhere else. A disabled key still holds its place under the cap (it can be enabled again).
 */
export const KEY_STATES = ['active', 'revoked', 'expired', 'pending', 'denied', 'disabled'] as const;
export type KeyState = (typeof KEY_STATES)[number];

/** The same rule for a key in memory (the record of a key just minted, rotated or changed), judged at `now`. */
export function keyStateOf(
  k: { approval: 'pending' | 'denied' | null; revokedAt: Date | null; expiresAt: Date | null; enabled: boolean },
  now: Date,
): KeyState {
  if (k.approval === 'denied') return 'denied';
  if (k.revokedAt) return 'revoked';
  if (k.approval === 'pending') return 'pending';
  if (k.expiresAt && k.expiresAt.getTime() <= now.getTime()) return 'expired';
  return k.enabled === false ? 'disabled' : 'active';
}

const revoked = (alias: string) => `${alias}.revoked_at IS NOT NULL`;
const expired = (alias: string, now: string) =>
  `(${alias}.expires_at IS NOT NULL AND ${alias}.expires_at <= ${now}::timestamptz)`;

/** The state of the api_keys row aliased `alias`, judged at the timestamptz `now` (an SQL expression, e.g. `$2`). */
export function keyStateSql(alias: string, now: string): string {
  return `(CASE WHEN ${alias}.approval = 'denied' THEN 'denied' WHEN ${revoked(alias)} THEN 'revoked' WHEN ${alias}.approval = 'pending' THEN 'pending'
    WHEN ${expired(alias, now)} THEN 'expired' WHEN NOT ${alias}.enabled THEN 'disabled' ELSE 'active' END)`;
}

/**
 * A key that holds a place under the cap and may rotate: active, disabled or pending (a pending key
 * counts against the cap, as it becomes active on approval; it still verifies only once approved).
 * Neither revoked nor expired, as a plain condition, which PostgreSQL turns into
 * `revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now)`: the cap's counts stay
 * index-only scans of the partial index api_keys_active_owner_idx.
 */
export function activeKeySql(alias: string, now: string): string {
  return `(NOT ${revoked(alias)} AND NOT ${expired(alias, now)})`;
}
