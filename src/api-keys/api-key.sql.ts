/*
 * Every statement of the key store, as SQL text. The repositories beside this file only bind
 * parameters and map rows; what a statement does, and why in one round trip, is said here.
 */
import type { KeysetPosition } from '../common/pagination.js';
import { scrubCredentialsSql } from '../common/request-context.js';
import { auditInsertManySql, auditInsertPerRowSql, auditInsertSql } from '../audit/audit.repository.js';
import { keyEventPerRowSql, outboxInsertSql, type EventType } from '../events/event-types.js';
import { orgPeopleCountSql } from '../directory/org-people.sql.js';
import { activeKeySql, keyStateSql, type KeyState } from './key-state.js';
import { KEY_SETTINGS_COLUMNS, MINT_SETTINGS_COLUMNS, mintSettingsValues } from './key-settings.sql.js';

/** An api_keys row aliased `k`, as ApiKeyEntity. */
export const ENTITY_COLUMNS = `k.id, k.user_id AS "userId", k.org_id AS "orgId", k.name, k.lookup, k.last4, k.key_hash AS "keyHash", k.scopes,
  k.created_at AS "createdAt", k.expires_at AS "expiresAt", k.last_used_at AS "lastUsedAt", k.revoked_at AS "revokedAt",
  k.previous_lookup AS "previousLookup", k.previous_key_hash AS "previousKeyHash", k.previous_expires_at AS "previousExpiresAt",
  k.created_by AS "createdBy", k.approval,
  ${KEY_SETTINGS_COLUMNS}`;

// ---- Minting under the cap ---------------------------------------------------------------

/**
 * One mint: `slot` locks the pair's count row if it is below the cap ($11; null: no check, the
 * caller holds the lock and has counted); every other part runs only if `slot` found it.
 * Parameters: the key $1-$10, the cap $11, the key's approval $12, the audit event from $13 (14 values), the outbox
 * event after it, and last the key's `created_by` (a service key's minting admin, else null).
 */
export function mintSql(withAudit: boolean, withEvent: boolean): string {
  const createdBy = 13 + (withAudit ? 14 : 0) + (withEvent ? 4 : 0);
  const parts = [
    `slot AS (
       SELECT 1 FROM api_key_counts WHERE user_id = $2::uuid AND org_id = $3::uuid AND ($11::int IS NULL OR unrevoked < $11::int) FOR UPDATE)`,
    `k AS (
       INSERT INTO api_keys (id, user_id, org_id, name, lookup, last4, key_hash, scopes, created_at, expires_at, approval, created_by)
       SELECT $1::uuid, $2::uuid, $3::uuid, $4::text, $5::text, $6::text, $7::bytea, $8::text[], $9::timestamptz, $10::timestamptz, $12::text, $${createdBy}::uuid FROM slot
       RETURNING id)`,
  ];
  if (withAudit) parts.push(`a AS (${auditInsertSql(13, 'k')})`);
  if (withEvent) parts.push(`o AS (${outboxInsertSql(withAudit ? 27 : 13, 'k')})`);
  return `WITH ${parts.join(',\n')}\nSELECT id FROM k`;
}

/** The exact path's lock: the pair's count row, created if missing. Parameters: user $1, org $2. */
export const LOCK_COUNT_SQL = `INSERT INTO api_key_counts AS c (user_id, org_id, unrevoked) VALUES ($1, $2, 0)
  ON CONFLICT (user_id, org_id) DO UPDATE SET unrevoked = c.unrevoked`;

/** Under that lock: the true number of unrevoked keys written back, and the active ones counted (at $3). */
export const RECOUNT_SQL = `UPDATE api_key_counts c SET unrevoked = e.unrevoked
    FROM (SELECT count(*)::int AS unrevoked, count(*) FILTER (WHERE ${activeKeySql('x', '$3')})::int AS active
            FROM api_keys x WHERE x.user_id = $1 AND x.org_id = $2 AND x.revoked_at IS NULL) e
   WHERE c.user_id = $1 AND c.org_id = $2
   RETURNING e.active`;

/**
 * The batch mint. `input`: the keys in arrival order with their cap ($1, JSON); `slot` locks the
 * count rows of the batch's (user, org) pairs, in one order on every instance (no deadlock between
 * batches); a key is inserted if its place among its pair's keys in the batch keeps the count within
 * the cap; its audit ($2) and outbox ($3) events follow it (joined on the key's id). The trigger on
 * api_keys moves the counts before the commit. $4: the batch's clock, for expiry.
 */
export const MINT_BATCH_SQL = `
  WITH input AS (
    SELECT k.*, e.n, (e.doc->>'cap')::int AS cap
      FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS e(doc, n),
           LATERAL jsonb_populate_record(NULL::api_keys, e.doc->'key') AS k),
  pairs AS (SELECT user_id, org_id, max(cap) AS cap FROM input GROUP BY user_id, org_id),
  locked AS (
    SELECT c.user_id, c.org_id, c.unrevoked FROM api_key_counts c
     WHERE (c.user_id, c.org_id) IN (SELECT user_id, org_id FROM pairs)
     ORDER BY c.user_id, c.org_id
       FOR UPDATE),
  seeded AS (
    INSERT INTO api_key_counts (user_id, org_id, unrevoked)
    SELECT p.user_id, p.org_id,
           (SELECT count(*)::int FROM api_keys x WHERE x.user_id = p.user_id AND x.org_id = p.org_id AND x.revoked_at IS NULL)
      FROM pairs p
     WHERE NOT EXISTS (SELECT 1 FROM api_key_counts c WHERE c.user_id = p.user_id AND c.org_id = p.org_id)
    ON CONFLICT DO NOTHING
    RETURNING user_id, org_id, unrevoked),
  slot AS (SELECT * FROM locked UNION ALL SELECT * FROM seeded),
  k AS (
    INSERT INTO api_keys (id, user_id, org_id, name, lookup, last4, key_hash, scopes, created_at, expires_at, approval, created_by, ${MINT_SETTINGS_COLUMNS})
    SELECT r.id, r.user_id, r.org_id, r.name, r.lookup, r.last4, r.key_hash, r.scopes, r.created_at, r.expires_at, r.approval, r.created_by, ${mintSettingsValues('r')}
      FROM (SELECT i.*, row_number() OVER (PARTITION BY i.user_id, i.org_id ORDER BY i.n) AS place FROM input i) r
      JOIN slot s ON s.user_id = r.user_id AND s.org_id = r.org_id
     WHERE s.unrevoked + r.place <= r.cap
    RETURNING id, user_id, org_id),
  a AS (${auditInsertManySql(2, 'JOIN k ON k.id = a.target_id')}),
  o AS (
    INSERT INTO event_outbox (org_id, type, data, created_at)
    SELECT o.org_id, o.type, o.data, o.created_at
      FROM jsonb_to_recordset($3::jsonb) AS o(key_id uuid, org_id uuid, type text, data jsonb, created_at timestamptz)
      JOIN k ON k.id = o.key_id)
  SELECT 'minted' AS outcome, id, user_id, org_id FROM k
  UNION ALL
  -- A pair with a refused mint (its locked, latest count says full) is full when its active
  -- keys as this statement saw them, plus this batch's, reach the cap: 409 with no second look.
  -- Otherwise (expired keys, or a count that is wrong) the exact path decides. Counted only for
  -- such pairs, at most cap rows (the partial index api_keys_active_owner_idx).
  SELECT 'full', NULL, p.user_id, p.org_id
    FROM pairs p
   WHERE EXISTS (SELECT 1 FROM input i WHERE i.user_id = p.user_id AND i.org_id = p.org_id AND i.id NOT IN (SELECT id FROM k))
     AND (SELECT count(*) FROM (SELECT 1 FROM api_keys x
                                 WHERE x.user_id = p.user_id AND x.org_id = p.org_id AND ${activeKeySql('x', '$4')}
                                 LIMIT p.cap) z)
         + (SELECT count(*) FROM k WHERE k.user_id = p.user_id AND k.org_id = p.org_id) >= p.cap`;

// ---- Management: list, rotate, revoke -----------------------------------------------------

export interface KeyPageFilter {
  /** Exactly one of the two scopes the list is read in. */
  scope: { userId: string } | { orgId: string };
  /** A further narrowing: the org for a user's list, the owner for an org's. */
  orgId?: string | null;
  userId?: string | null;
  state?: KeyState | null;
  /** Keys strictly after this position in (created_at DESC, id DESC) order. */
  after: KeysetPosition | null;
  /** Rows to read: the page size plus one look-ahead row. */
  take: number;
  now: Date;
}

/**
 * One page of keys, newest first (keyset on created_at, id), with each key's `state` (the one
 * rule, keyStateSql) and, for an org's list, its owner's e-mail and whether they are still a member.
 */
export function keyPageSql(filter: KeyPageFilter, withOwner: boolean): { text: string; values: unknown[] } {
  const values: unknown[] = [filter.now];
  const conditions: string[] = [];
  const add = (sql: (param: string) => string, value: unknown) => {
    values.push(value);
    conditions.push(sql(`$${values.length}`));
  };
  if ('userId' in filter.scope) add((p) => `k.user_id = ${p}::uuid`, filter.scope.userId);
  else add((p) => `k.org_id = ${p}::uuid`, filter.scope.orgId);
  if (filter.orgId) add((p) => `k.org_id = ${p}::uuid`, filter.orgId);
  if (filter.userId) add((p) => `k.user_id = ${p}::uuid`, filter.userId);
  if (filter.state) add((p) => `${keyStateSql('k', '$1')} = ${p}`, filter.state);
  if (filter.after) {
    values.push(filter.after.createdAt, filter.after.id);
    conditions.push(`(k.created_at, k.id) < ($${values.length - 1}::timestamptz, $${values.length}::uuid)`);
  }
  values.push(filter.take);
  const owner = withOwner
    ? `, u.email AS "ownerEmail", (m.user_id IS NOT NULL) AS "ownerIsMember", u.kind AS "ownerKind"`
    : '';
  const joins = withOwner
    ? `LEFT JOIN users u ON u.id = k.user_id
       LEFT JOIN memberships m ON m.org_id = k.org_id AND m.user_id = k.user_id`
    : '';
  return {
    text: `SELECT ${ENTITY_COLUMNS}, ${keyStateSql('k', '$1')} AS state${owner}
             FROM api_keys k ${joins}
            WHERE ${conditions.join(' AND ')}
            ORDER BY k.created_at DESC, k.id DESC
            LIMIT $${values.length}`,
    values,
  };
}

export const FIND_OWNERSHIP_SQL = `SELECT user_id AS "userId", org_id AS "orgId" FROM api_keys WHERE id = $1`;

/**
 * Rotation: the new secret ($3-$5) replaces the current one, which moves to `previous_*` until
 * $7 (null: it stops at once). A previous secret still in its grace is dropped: rotating again ends
 * the older grace at once. Only an active key ($6: now) of the caller ($2) rotates.
 */
export const ROTATE_SQL = `UPDATE api_keys k
    SET previous_lookup = CASE WHEN $7::timestamptz IS NULL THEN NULL ELSE k.lookup END,
        previous_key_hash = CASE WHEN $7::timestamptz IS NULL THEN NULL ELSE k.key_hash END,
        previous_expires_at = $7::timestamptz,
        lookup = $3, last4 = $4, key_hash = $5
  WHERE k.id = $1 AND k.user_id = $2 AND ${activeKeySql('k', '$6')}
  RETURNING ${ENTITY_COLUMNS}`;

export const KEY_STANDING_SQL = `SELECT revoked_at AS "revokedAt", expires_at AS "expiresAt", org_id AS "orgId" FROM api_keys WHERE id = $1 AND user_id = $2`;

/** Who may revoke: the owner, an admin of the key's org, or (a reported leak) anyone holding the key id. */
export type RevokeScope = 'user_id' | 'org_id' | 'id';

/**
 * A revoke: `was` is revoked_at before the statement, so only a real change is audited and
 * announced; an already revoked key keeps its first `revoked_at`. A revoked key keeps no previous
 * secret. Parameters: key id $1, the scope's id $2, time $3.
 */
export const revokeSql = (scope: RevokeScope) => `UPDATE api_keys k
    SET revoked_at = COALESCE(k.revoked_at, $3::timestamptz), previous_lookup = NULL, previous_key_hash = NULL, previous_expires_at = NULL
   FROM (SELECT id, revoked_at AS was FROM api_keys WHERE id = $1::uuid AND ${scope} = $2::uuid FOR UPDATE) old
  WHERE k.id = old.id
  RETURNING k.id, k.org_id, k.user_id, k.name, old.was, k.lookup, k.last4, k.scopes, k.created_at, k.expires_at, k.revoked_at`;

/**
 * A revoke with its audit event (template $4, details from the row: `name` scrubbed and, with
 * `withOwner`, `owner_id`) and its event `eventType` (`api_key.revoked` unless said; `revoked_by`
 * $5, or $4 without audit), each only when this statement revoked the key: one round trip, one commit.
 */
export function revokeWritingSql(
  scope: RevokeScope,
  audit: { withOwner: boolean } | null,
  withEvent: boolean,
  eventType: EventType = 'api_key.revoked',
): string {
  const parts = [`r AS (${revokeSql(scope)})`, `changed AS (SELECT * FROM r WHERE was IS NULL)`];
  let param = 4;
  if (audit) {
    const details = [`'name', ${scrubCredentialsSql('r.name')}`, ...(audit.withOwner ? [`'owner_id', r.user_id`] : [])];
    parts.push(`a AS (${auditInsertPerRowSql(param++, 'changed', `jsonb_build_object(${details.join(', ')})`)})`);
  }
  if (withEvent)
    parts.push(
      `o AS (${keyEventPerRowSql(eventType, 'changed', `jsonb_build_object('revoked_by', $${param}::uuid)`)})`,
    );
  return `WITH ${parts.join(',\n')}\nSELECT * FROM r`;
}

/**
 * Keys by lookup ($1), for matching reported leaks: a rotated key's previous secret is a secret of
 * the key only during its grace ($2: now), after which it is ignored (and cleared, below).
 */
export const FIND_BY_LOOKUPS_SQL = `SELECT id, org_id AS "orgId", lookup, key_hash AS "keyHash" FROM api_keys WHERE lookup = ANY($1::text[])
  UNION ALL
  SELECT id, org_id, previous_lookup, previous_key_hash FROM api_keys
   WHERE previous_lookup = ANY($1::text[]) AND previous_key_hash IS NOT NULL AND previous_expires_at > $2::timestamptz`;

/** Forgets previous secrets whose grace ended by $1: they can neither verify nor be matched any more. */
export const CLEAR_LAPSED_PREVIOUS_SQL = `UPDATE api_keys SET previous_lookup = NULL, previous_key_hash = NULL, previous_expires_at = NULL
  WHERE previous_expires_at <= $1::timestamptz
  RETURNING id`;

// ---- Verification (auth's ApiKeyStore port) -----------------------------------------------

const PREVIOUS_IN_GRACE = `k.previous_expires_at > $3::timestamptz`;
const VERIFY_COLUMNS = `k.id, k.lookup, k.key_hash,
  CASE WHEN ${PREVIOUS_IN_GRACE} THEN k.previous_lookup END AS previous_lookup,
  CASE WHEN ${PREVIOUS_IN_GRACE} THEN k.previous_key_hash END AS previous_key_hash,
  CASE WHEN ${PREVIOUS_IN_GRACE} THEN k.previous_expires_at END AS previous_expires_at,
  k.user_id, k.org_id, k.scopes, k.expires_at, k.revoked_at, k.last_used_at,
  k.enabled, (k.approval IS NOT NULL) AS pending,
  k.rate_limits, (k.credits_remaining IS NOT NULL) AS has_credits, k.credits_refill, k.credits_epoch, k.allowed_cidrs, k.metadata`;
/**
 * A key answers to its lookup or, only during a rotation's grace ($3: now), to its previous lookup,
 * and only with the matching keyed hash ($4, the presented keys' hashes): a wrong secret under a
 * real lookup reads no row, as a lookup that does not exist (no row to send, decode and map, so
 * the time does not tell the two apart). A key awaiting approval (the org's key policy) is read
 * with `pending` true, so the verifier refuses it and counts the outcome; a denied key answers
 * to nothing, as if it did not exist.
 */
const VERIFY_WHERE = `((k.lookup = ANY($1::text[]) AND k.key_hash = ANY($4::bytea[]))
    OR (k.previous_lookup = ANY($1::text[]) AND k.previous_key_hash = ANY($4::bytea[]) AND ${PREVIOUS_IN_GRACE}))
  AND (k.approval IS NULL OR k.approval = 'pending')`;

/**
 * One statement for a whole batch of verifications ($1 lookups, $4 their keyed hashes): key, owner, membership, member
 * count, and the key's org's meters for the day $2 (so GET /usage with a key needs no second round trip).
 */
export const VERIFY_WITH_DIRECTORY_SQL = `
  SELECT ${VERIFY_COLUMNS},
         u.email, m.role, o.plan, u.kind AS user_kind,
         CASE WHEN m.role IS NULL THEN 0 ELSE ${orgPeopleCountSql('k.org_id')} END AS member_count,
         uc.asks, uc.retrieves, uc.imports, uc.captures
    FROM api_keys k
    LEFT JOIN memberships m ON m.org_id = k.org_id AND m.user_id = k.user_id
    LEFT JOIN users u ON u.id = k.user_id AND m.role IS NOT NULL
    LEFT JOIN orgs o ON o.id = k.org_id AND m.role IS NOT NULL
    LEFT JOIN usage_counters uc ON uc.org_id = k.org_id AND uc.day = $2::date
   WHERE ${VERIFY_WHERE}`;

/** The same when a host's directory answers for owners: the keys and meters only. */
export const VERIFY_KEYS_ONLY_SQL = `
  SELECT ${VERIFY_COLUMNS},
         NULL::text AS email, NULL::text AS role, NULL::text AS plan, NULL::text AS user_kind, 0 AS member_count,
         uc.asks, uc.retrieves, uc.imports, uc.captures
    FROM api_keys k
    LEFT JOIN usage_counters uc ON uc.org_id = k.org_id AND uc.day = $2::date
   WHERE ${VERIFY_WHERE}`;
