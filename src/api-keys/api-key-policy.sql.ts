/*
 * The statements over api_keys that the org's key policy drives: the lifetime cap, the approval
 * decision and the stale sweep. The repository beside this file binds parameters and maps rows.
 */

/** The facts an event about a key carries (as revokeSql returns them; `was` kept for RevokedKey's mapping). */
const KEY_FACTS = `k.id, k.org_id, k.user_id, k.name, k.lookup, k.last4, k.scopes, k.created_at, k.expires_at, k.revoked_at`;

/**
 * The org's ($1) key-policy lock, exclusively until the transaction ends: every mint's insert
 * takes it shared (migration 1765620000000), so the cap after it waits for the mints in flight
 * and sees them, and a mint that waited reads the committed policy.
 */
export const POLICY_LOCK_SQL = `SELECT pg_advisory_xact_lock(hashtextextended('kui.key_policy:' || $1::uuid::text, 0))`;

/**
 * The lifetime policy ($2 days) applied to the org's ($1) unrevoked keys that outlive it: each
 * now expires at its creation plus the limit. Keys already expired at $3 (now) are left as they are.
 */
export const CAP_LIFETIME_SQL = `UPDATE api_keys k SET expires_at = k.created_at + make_interval(days => $2::int)
  WHERE k.org_id = $1::uuid AND k.revoked_at IS NULL
    AND (k.expires_at IS NULL OR (k.expires_at > k.created_at + make_interval(days => $2::int) AND k.expires_at > $3::timestamptz))
  RETURNING ${KEY_FACTS}, NULL::timestamptz AS was`;

/**
 * An admin's decision on a pending key ($1) of the org ($2): `approve` clears the mark (it verifies
 * from now on), `deny` marks it denied and revokes it at $4 (it never verifies). Only a pending,
 * unrevoked key is decided; otherwise no row (KEY_APPROVAL_SQL tells which).
 */
export const DECIDE_SQL = `UPDATE api_keys k
    SET approval = CASE WHEN $3::text = 'approve' THEN NULL ELSE 'denied' END,
        revoked_at = CASE WHEN $3::text = 'approve' THEN NULL ELSE $4::timestamptz END,
        previous_lookup = CASE WHEN $3::text = 'approve' THEN k.previous_lookup END,
        previous_key_hash = CASE WHEN $3::text = 'approve' THEN k.previous_key_hash END,
        previous_expires_at = CASE WHEN $3::text = 'approve' THEN k.previous_expires_at END
  WHERE k.id = $1::uuid AND k.org_id = $2::uuid AND k.approval = 'pending' AND k.revoked_at IS NULL
  RETURNING ${KEY_FACTS}, NULL::timestamptz AS was`;

/** A key of the org as the decision needs to explain a refusal: null row when there is none. */
export const KEY_APPROVAL_SQL = `SELECT approval, revoked_at AS "revokedAt" FROM api_keys WHERE id = $1::uuid AND org_id = $2::uuid`;

/** Idle since: the last use, or the mint for a key never used. */
const IDLE_SINCE = `COALESCE(k.last_used_at, k.created_at)`;
/** A key the stale sweep looks at: unrevoked, approved (or never under approval), not expired at $3. */
const SWEEPABLE = `k.org_id = $1::uuid AND k.revoked_at IS NULL AND k.approval IS NULL AND (k.expires_at IS NULL OR k.expires_at > $3::timestamptz)`;

/**
 * Warnings of the coming stale revoke: the org's ($1) keys idle since $2 or earlier, not yet
 * warned since they were last used, at most $4 of them. The warning row is written at $3 once per
 * idle period: two instances racing insert the same key, and the second, waiting on the first's
 * row, finds it warned and returns nothing. Returns the keys warned now.
 */
export const WARN_STALE_SQL = `WITH due AS (
    SELECT k.id FROM api_keys k
     WHERE ${SWEEPABLE} AND ${IDLE_SINCE} <= $2::timestamptz
       AND NOT EXISTS (SELECT 1 FROM api_key_stale_warnings w WHERE w.key_id = k.id AND w.warned_at >= ${IDLE_SINCE})
     ORDER BY k.id LIMIT $4::int),
  warned AS (
    INSERT INTO api_key_stale_warnings AS w (key_id, warned_at) SELECT id, $3::timestamptz FROM due
    ON CONFLICT (key_id) DO UPDATE SET warned_at = EXCLUDED.warned_at
     WHERE w.warned_at < (SELECT ${IDLE_SINCE} FROM api_keys k WHERE k.id = w.key_id)
    RETURNING key_id)
  SELECT ${KEY_FACTS}, ${IDLE_SINCE} AS idle_since FROM api_keys k JOIN warned ON warned.key_id = k.id`;

/** The org's ($1) keys idle since $2 or earlier (at $3: now), at most $4: the stale revoke's candidates. */
export const STALE_KEYS_SQL = `SELECT k.id FROM api_keys k WHERE ${SWEEPABLE} AND ${IDLE_SINCE} <= $2::timestamptz ORDER BY k.id LIMIT $4::int`;

/**
 * A stale revoke of one key ($1 of org $2), at $3, only if it is still idle since $4 or earlier:
 * a key used meanwhile, or revoked by another instance's sweep first, is left alone (no row).
 */
export const REVOKE_STALE_SQL = `UPDATE api_keys k
    SET revoked_at = $3::timestamptz, previous_lookup = NULL, previous_key_hash = NULL, previous_expires_at = NULL
  WHERE k.id = $1::uuid AND ${SWEEPABLE.replace('$1', '$2')} AND ${IDLE_SINCE} <= $4::timestamptz
  RETURNING ${KEY_FACTS}, NULL::timestamptz AS was`;
