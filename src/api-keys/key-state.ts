/**
 * A key's state, the one rule: revoked wins over expired; a key that is neither is active. The
 * list filters (`?state=`), the org admins' `state` field and every statement that selects by
 * state use `keyStateSql`, so a new state (e.g. disabled) is added here and nowhere else.
 */
export const KEY_STATES = ['active', 'revoked', 'expired'] as const;
export type KeyState = (typeof KEY_STATES)[number];

/** The state of the api_keys row aliased `alias`, judged at the timestamptz `now` (an SQL expression, e.g. `$2`). */
export function keyStateSql(alias: string, now: string): string {
  return `(CASE WHEN ${alias}.revoked_at IS NOT NULL THEN 'revoked'
                WHEN ${alias}.expires_at IS NOT NULL AND ${alias}.expires_at <= ${now}::timestamptz THEN 'expired'
                ELSE 'active' END)`;
}
