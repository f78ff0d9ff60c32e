import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import type { Pool } from 'pg';
import type { DataSource, EntityManager, Repository } from 'typeorm';
import { returnedRows } from '../database/transactions.js';
import type { KeysetPosition } from '../common/pagination.js';
import type { Plan, Role } from '../common/roles.js';
import type { ApiKeyStore, KeyVerificationRow } from '../auth/api-key-store.js';
import { auditInsertManySql, auditInsertPerRowSql, auditInsertSql, auditInsertValues, auditRowsJson, auditTemplateJson, type AuditTemplate, type NewAuditRow } from '../audit/audit.repository.js';
import { scrubCredentialsSql } from '../common/request-context.js';
import { endOfTurnLoader } from '../common/end-of-turn-loader.js';
import { keyEventPerRowSql, outboxInsertSql, outboxParams, type KeyEventFields, type OutboxEvent } from '../events/event-types.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { pgPool } from '../database/pg-pool.js';

export interface NewApiKey {
  userId: string;
  orgId: string;
  name: string;
  lookup: string;
  last4: string;
  keyHash: Buffer;
  scopes: string[];
  expiresAt: Date | null;
  createdAt: Date;
}

/** The secret a rotation puts in place. */
export interface NewSecret {
  lookup: string;
  last4: string;
  keyHash: Buffer;
}

/** A mint as one write: the key (its id drawn by the caller) and the events that go with it. */
export interface MintWrite {
  key: NewApiKey & { id: string };
  /** The audit event (AuditService.prepare), written only with the key; null: none. */
  audit: NewAuditRow | null;
  /** The outbox event, written only with the key; null when events are off. */
  event: OutboxEvent | null;
}

/**
 * The mint statement. `slot` locks the pair's count row if it is below the cap ($11; null: no
 * check, the caller holds the lock and has counted); every other part runs only if `slot`
 * found it. Parameters: the key $1-$10, the cap $11, the audit event from $12, the outbox event after it.
 */
function mintShape(write: MintWrite): { name: string; text: string } {
  const parts = [
    `slot AS (
       SELECT 1 FROM api_key_counts WHERE user_id = $2::uuid AND org_id = $3::uuid AND ($11::int IS NULL OR unrevoked < $11::int) FOR UPDATE)`,
    `k AS (
       INSERT INTO api_keys (id, user_id, org_id, name, lookup, last4, key_hash, scopes, created_at, expires_at)
       SELECT $1::uuid, $2::uuid, $3::uuid, $4::text, $5::text, $6::text, $7::bytea, $8::text[], $9::timestamptz, $10::timestamptz FROM slot
       RETURNING id)`,
  ];
  let next = 12;
  if (write.audit) {
    parts.push(`a AS (${auditInsertSql(next, 'k')})`);
    next += 14;
  }
  if (write.event) parts.push(`o AS (${outboxInsertSql(next, 'k')})`);
  return { name: `kui_mint_${write.audit ? 'a' : ''}${write.event ? 'o' : ''}`, text: `WITH ${parts.join(',\n')}\nSELECT id FROM k` };
}

function mintValues(write: MintWrite, cap: number | null): unknown[] {
  const k = write.key;
  const values: unknown[] = [k.id, k.userId, k.orgId, k.name, k.lookup, k.last4, k.keyHash, k.scopes, k.createdAt, k.expiresAt, cap];
  if (write.audit) values.push(...auditInsertValues(write.audit));
  if (write.event) values.push(...outboxParams(write.event));
  return values;
}

const mintedEntity = (k: NewApiKey & { id: string }): ApiKeyEntity =>
  Object.assign(new ApiKeyEntity(), { ...k, lastUsedAt: null, revokedAt: null, previousLookup: null, previousKeyHash: null, previousExpiresAt: null });

export type KeyState = 'active' | 'revoked' | 'expired';

/** A key of an org as its admins see it: with the owner's e-mail and whether they are still a member. */
export interface OrgKeyRow extends ApiKeyEntity {
  ownerEmail: string | null;
  ownerIsMember: boolean;
}

export interface OrgKeyFilter {
  orgId: string;
  state?: KeyState;
  userId?: string;
  /** The instant `state` is judged at. */
  now: Date;
}

const ENTITY_COLUMNS = `k.id, k.user_id AS "userId", k.org_id AS "orgId", k.name, k.lookup, k.last4, k.key_hash AS "keyHash", k.scopes,
  k.created_at AS "createdAt", k.expires_at AS "expiresAt", k.last_used_at AS "lastUsedAt", k.revoked_at AS "revokedAt",
  k.previous_lookup AS "previousLookup", k.previous_key_hash AS "previousKeyHash", k.previous_expires_at AS "previousExpiresAt"`;

const STATE_SQL: Record<KeyState, string> = {
  active: 'k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > $2)',
  revoked: 'k.revoked_at IS NOT NULL',
  expired: 'k.revoked_at IS NULL AND k.expires_at <= $2',
};

/** What a revoke touched: the masked facts an event about the key carries, and whether it changed. */
export interface RevokedKey extends KeyEventFields {
  /** It was revoked before: nothing changed. */
  alreadyRevoked: boolean;
}

/** What a revoke writes with the key, in its statement, only when it revokes it now. */
export interface RevokeWrite {
  /**
   * The audit event (AuditService.prepareTemplate): the statement adds the org, the key's id
   * and, to the details, the key's `name` (scrubbed) and with `withOwner` its `owner_id`. Null: none.
   */
  audit: { template: AuditTemplate; withOwner: boolean } | null;
  /** `api_key.revoked` with the key's masked fields and `revoked_by`; null when events are off. */
  event: { revokedBy: string } | null;
}

interface RevokedRow {
  id: string; org_id: string; user_id: string; name: string; was: Date | null;
  lookup: string; last4: string; scopes: string[]; created_at: Date; expires_at: Date | null; revoked_at: Date | null;
}

/** `was` is revoked_at before the statement: only a real change is audited and announced. Parameters: key id $1, owner $2, time $3. */
const revokeSql = (column: 'user_id' | 'org_id' | 'id') => `UPDATE api_keys k SET revoked_at = COALESCE(k.revoked_at, $3::timestamptz)
           FROM (SELECT id, revoked_at AS was FROM api_keys WHERE id = $1::uuid AND ${column} = $2::uuid FOR UPDATE) old
          WHERE k.id = old.id
          RETURNING k.id, k.org_id, k.user_id, k.name, old.was, k.lookup, k.last4, k.scopes, k.created_at, k.expires_at, k.revoked_at`;

const revokedKey = (row: RevokedRow | undefined): RevokedKey | null =>
  row
    ? {
        id: row.id, orgId: row.org_id, userId: row.user_id, name: row.name, alreadyRevoked: row.was !== null,
        lookup: row.lookup, last4: row.last4, scopes: row.scopes, createdAt: row.created_at, expiresAt: row.expires_at, revokedAt: row.revoked_at,
      }
    : null;

export interface KeyListFilter {
  orgId: string | null;
  state: KeyState | null;
  /** Keys strictly after this position in (created_at DESC, id DESC) order. */
  after: KeysetPosition | null;
  /** Rows to read: the page size plus one look-ahead row. */
  take: number;
  now: Date;
}

interface RawVerificationRow {
  id: string;
  lookup: string;
  key_hash: Buffer;
  previous_lookup: string | null;
  previous_key_hash: Buffer | null;
  previous_expires_at: Date | null;
  user_id: string;
  org_id: string;
  scopes: string[];
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  email: string | null;
  role: Role | null;
  plan: Plan | null;
  member_count: number | null;
  asks: number | null;
  retrieves: number | null;
  imports: number | null;
  captures: number | null;
}

// One statement for a whole batch of verifications: key, owner, membership, member count, and
// the key's org's meters for the day (so GET /usage with a key needs no second round trip).
// A key is found by its lookup or, during a rotation's grace period, by its previous lookup.
const VERIFY_WITH_DIRECTORY_SQL = `
  SELECT k.id, k.lookup, k.key_hash, k.previous_lookup, k.previous_key_hash, k.previous_expires_at, k.user_id, k.org_id, k.scopes, k.expires_at, k.revoked_at, k.last_used_at,
         u.email, m.role, o.plan,
         CASE WHEN m.role IS NULL THEN 0
              ELSE (SELECT count(*)::int FROM memberships c WHERE c.org_id = k.org_id) END AS member_count,
         uc.asks, uc.retrieves, uc.imports, uc.captures
    FROM api_keys k
    LEFT JOIN memberships m ON m.org_id = k.org_id AND m.user_id = k.user_id
    LEFT JOIN users u ON u.id = k.user_id AND m.role IS NOT NULL
    LEFT JOIN orgs o ON o.id = k.org_id AND m.role IS NOT NULL
    LEFT JOIN usage_counters uc ON uc.org_id = k.org_id AND uc.day = $2::date
   WHERE k.lookup = ANY($1::text[]) OR k.previous_lookup = ANY($1::text[])`;

const VERIFY_KEYS_ONLY_SQL = `
  SELECT k.id, k.lookup, k.key_hash, k.previous_lookup, k.previous_key_hash, k.previous_expires_at, k.user_id, k.org_id, k.scopes, k.expires_at, k.revoked_at, k.last_used_at,
         NULL::text AS email, NULL::text AS role, NULL::text AS plan, 0 AS member_count,
         uc.asks, uc.retrieves, uc.imports, uc.captures
    FROM api_keys k
    LEFT JOIN usage_counters uc ON uc.org_id = k.org_id AND uc.day = $2::date
   WHERE k.lookup = ANY($1::text[]) OR k.previous_lookup = ANY($1::text[])`;

const toVerificationRow = (r: RawVerificationRow): KeyVerificationRow => ({
  id: r.id,
  lookup: r.lookup,
  keyHash: r.key_hash,
  previousLookup: r.previous_lookup,
  previousKeyHash: r.previous_key_hash,
  previousExpiresAt: r.previous_expires_at,
  userId: r.user_id,
  orgId: r.org_id,
  scopes: r.scopes,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
  lastUsedAt: r.last_used_at,
  email: r.email,
  role: r.role,
  plan: r.plan,
  memberCount: Number(r.member_count ?? 0),
  usage: { asks: r.asks ?? 0, retrieves: r.retrieves ?? 0, imports: r.imports ?? 0, captures: r.captures ?? 0 },
});

/**
 * The batch mint (ApiKeyRepository.mintBatch). `input`: the keys in arrival order with their
 * cap; `slot` locks the count rows of the batch's (user, org) pairs, in one order on every
 * instance (no deadlock between batches); a key is inserted if its place among its pair's keys
 * in the batch keeps the count within the cap; its audit and outbox events follow it (joined on
 * the key's id). The trigger on api_keys moves the counts before the commit.
 */
const MINT_BATCH_SQL = `
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
    INSERT INTO api_keys (id, user_id, org_id, name, lookup, last4, key_hash, scopes, created_at, expires_at)
    SELECT r.id, r.user_id, r.org_id, r.name, r.lookup, r.last4, r.key_hash, r.scopes, r.created_at, r.expires_at
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
                                 WHERE x.user_id = p.user_id AND x.org_id = p.org_id AND x.revoked_at IS NULL
                                   AND (x.expires_at IS NULL OR x.expires_at > $4::timestamptz)
                                 LIMIT p.cap) z)
         + (SELECT count(*) FROM k WHERE k.user_id = p.user_id AND k.org_id = p.org_id) >= p.cap`;

@Injectable()
export class ApiKeyRepository implements ApiKeyStore {
  private readonly mints = endOfTurnLoader<{ write: MintWrite; cap: number }, 'minted' | 'full' | 'check' | undefined>(
    async (items) => {
      const outcomes = await this.mintBatch([...items]);
      return items.map((item) => outcomes.get(item.write.key.id));
    },
    2,
  );

  constructor(
    @InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  /**
   * Mints a key unless its owner already holds `cap` active keys in its org (null then), with its
   * audit event and outbox event: all or nothing. Usually one statement, one round trip, no
   * explicit transaction: the (user, org) row of `api_key_counts` is locked and checked
   * (count < cap), the key inserted, the events inserted, and the trigger on api_keys bumps the
   * count before the statement commits. Mints of the same pair on any instance queue on that row
   * lock, and each sees the count the previous one committed, so the cap is never exceeded.
   *
   * The count includes expired keys (expiry changes no row), so it can only be too high. When it
   * says "full" (or the pair has no row yet), `mintChecked` counts the active keys exactly.
   */
  async mintWithinCap(write: MintWrite, cap: number): Promise<ApiKeyEntity | null> {
    const outcome = await this.mints.load({ write, cap });
    if (outcome === 'minted') return mintedEntity(write.key);
    if (outcome === 'full') return null;
    return this.mintChecked(write, cap);
  }

  /**
   * The mints asked for during one event-loop turn (and while the previous batch ran), as one
   * statement and one commit (MINT_BATCH_SQL): one user's concurrent mints, which queue on their
   * count row anyway, take its lock once per batch instead of once each. Within a pair, mints
   * are admitted in arrival order while the count stays below the cap. A refused mint is `full`
   * when the active keys reach the cap, else (expired keys still counted) it takes the exact path.
   */
  private async mintBatch(items: Array<{ write: MintWrite; cap: number }>): Promise<Map<string, 'minted' | 'full' | 'check'>> {
    const keys = items.map(({ write: { key: k }, cap }) => ({
      cap,
      key: {
        id: k.id, user_id: k.userId, org_id: k.orgId, name: k.name, lookup: k.lookup, last4: k.last4, key_hash: `\\x${k.keyHash.toString('hex')}`,
        scopes: k.scopes, created_at: k.createdAt.toISOString(), expires_at: k.expiresAt?.toISOString() ?? null,
      },
    }));
    const audits = items.flatMap(({ write }) => (write.audit ? [write.audit] : []));
    const events = items.flatMap(({ write }) =>
      write.event ? [{ key_id: write.key.id, org_id: write.event.orgId, type: write.event.type, data: write.event.data, created_at: write.event.at.toISOString() }] : [],
    );
    // Expiry is judged at the batch's clock: the latest creation time in it (every item's "now").
    const now = new Date(Math.max(...items.map(({ write }) => write.key.createdAt.getTime())));
    const result = await this.pool().query<{ outcome: 'minted' | 'full'; id: string | null; user_id: string; org_id: string }>({
      name: 'kui_mint_batch',
      text: MINT_BATCH_SQL,
      values: [JSON.stringify(keys), auditRowsJson(audits), JSON.stringify(events), now],
    });
    const minted = new Set(result.rows.filter((r) => r.outcome === 'minted').map((r) => r.id));
    const full = new Set(result.rows.filter((r) => r.outcome === 'full').map((r) => `${r.user_id}:${r.org_id}`));
    return new Map(
      items.map(({ write: { key } }) => [
        key.id,
        minted.has(key.id) ? 'minted' : full.has(`${key.userId}:${key.orgId}`) ? 'full' : 'check',
      ]),
    );
  }

  /**
   * The exact path, in a transaction: lock the pair's count row (creating it if missing), count
   * the active keys (the partial index api_keys_active_owner_idx) and write the true number of
   * unrevoked keys back, then mint only if below `cap`. Counting after the lock is taken sees
   * every mint and revoke of the pair that committed before; later ones wait for this one.
   */
  private async mintChecked(write: MintWrite, cap: number): Promise<ApiKeyEntity | null> {
    const { userId, orgId, createdAt } = write.key;
    return this.db.transaction(async (m) => {
      await m.query(
        `INSERT INTO api_key_counts AS c (user_id, org_id, unrevoked) VALUES ($1, $2, 0)
         ON CONFLICT (user_id, org_id) DO UPDATE SET unrevoked = c.unrevoked`,
        [userId, orgId],
      );
      const [{ active }]: Array<{ active: number }> = returnedRows(
        await m.query(
          `UPDATE api_key_counts c SET unrevoked = e.unrevoked
             FROM (SELECT count(*)::int AS unrevoked, count(*) FILTER (WHERE expires_at IS NULL OR expires_at > $3)::int AS active
                     FROM api_keys WHERE user_id = $1 AND org_id = $2 AND revoked_at IS NULL) e
            WHERE c.user_id = $1 AND c.org_id = $2
            RETURNING e.active`,
          [userId, orgId, createdAt],
        ),
      );
      if (active >= cap) return null;
      await m.query(mintShape(write).text, mintValues(write, null));
      return mintedEntity(write.key);
    });
  }

  /**
   * One page of the caller's keys, newest first (keyset on created_at, id); revoked and expired
   * included unless filtered. Cursors hold milliseconds: created_at is always written from the
   * service's clock (a JS Date), never from now(), so no row hides between two cursors.
   */
  listOwned(userId: string, filter: KeyListFilter): Promise<ApiKeyEntity[]> {
    const q = this.keys.createQueryBuilder('k').where('k.user_id = :userId', { userId });
    if (filter.orgId) q.andWhere('k.org_id = :orgId', { orgId: filter.orgId });
    if (filter.state === 'revoked') q.andWhere('k.revoked_at IS NOT NULL');
    if (filter.state === 'active') q.andWhere('k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > :now)', { now: filter.now });
    if (filter.state === 'expired') q.andWhere('k.revoked_at IS NULL AND k.expires_at <= :now', { now: filter.now });
    if (filter.after) {
      q.andWhere('(k.created_at, k.id) < (:afterAt, :afterId)', { afterAt: filter.after.createdAt, afterId: filter.after.id });
    }
    return q.orderBy('k.created_at', 'DESC').addOrderBy('k.id', 'DESC').take(filter.take).getMany();
  }

  /** Who owns a key and which org it is bound to; null when there is no such key. */
  async findOwnership(keyId: string): Promise<{ userId: string; orgId: string } | null> {
    const rows: Array<{ user_id: string; org_id: string }> = await this.db.query(`SELECT user_id, org_id FROM api_keys WHERE id = $1`, [keyId]);
    return rows[0] ? { userId: rows[0].user_id, orgId: rows[0].org_id } : null;
  }

  /**
   * Soft-revokes a key the caller owns. An already revoked key keeps its first `revoked_at`.
   * Returns null when there is no such key or it is someone else's (one statement, same path).
   */
  async revokeOwned(userId: string, keyId: string, at: Date, write: RevokeWrite): Promise<RevokedKey | null> {
    return this.revokeWriting('user_id', userId, keyId, at, write);
  }

  /**
   * Rotation, one statement: the new secret replaces the current one, which moves to `previous_*`
   * until `graceEndsAt` (null: it stops at once). A previous secret still in its grace is dropped:
   * rotating again ends the older grace at once. Only an active key of the caller rotates;
   * otherwise null (and `keyStanding` tells a missing key from a revoked or expired one).
   */
  async rotateOwned(userId: string, keyId: string, secret: NewSecret, now: Date, graceEndsAt: Date | null, manager?: EntityManager): Promise<ApiKeyEntity | null> {
    const rows = returnedRows<ApiKeyEntity>(
      await (manager ?? this.db.manager).query(
        `UPDATE api_keys k
            SET previous_lookup = CASE WHEN $7::timestamptz IS NULL THEN NULL ELSE k.lookup END,
                previous_key_hash = CASE WHEN $7::timestamptz IS NULL THEN NULL ELSE k.key_hash END,
                previous_expires_at = $7::timestamptz,
                lookup = $3, last4 = $4, key_hash = $5
          WHERE k.id = $1 AND k.user_id = $2 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > $6)
          RETURNING ${ENTITY_COLUMNS}`,
        [keyId, userId, secret.lookup, secret.last4, secret.keyHash, now, graceEndsAt],
      ),
    );
    return rows[0] ?? null;
  }

  /** Why a key of the caller cannot be rotated: null when there is no such key of theirs. */
  async keyStanding(userId: string, keyId: string, manager?: EntityManager): Promise<{ revokedAt: Date | null; expiresAt: Date | null } | null> {
    const rows: Array<{ revokedAt: Date | null; expiresAt: Date | null }> = await (manager ?? this.db.manager).query(
      `SELECT revoked_at AS "revokedAt", expires_at AS "expiresAt" FROM api_keys WHERE id = $1 AND user_id = $2`,
      [keyId, userId],
    );
    return rows[0] ?? null;
  }

  /** Every key bound to an org, whoever minted it, newest first: `limit + 1` rows after `after` (keyset). */
  async listInOrg(filter: OrgKeyFilter, after: { createdAt: Date; id: string } | null, limit: number): Promise<OrgKeyRow[]> {
    const values: unknown[] = [filter.orgId, filter.now];
    const conditions = ['k.org_id = $1'];
    if (filter.state) conditions.push(STATE_SQL[filter.state]);
    if (filter.userId) {
      values.push(filter.userId);
      conditions.push(`k.user_id = $${values.length}`);
    }
    if (after) {
      values.push(after.createdAt, after.id);
      conditions.push(`(k.created_at, k.id) < ($${values.length - 1}, $${values.length})`);
    }
    values.push(limit + 1);
    return this.db.query(
      `SELECT ${ENTITY_COLUMNS}, u.email AS "ownerEmail", (m.user_id IS NOT NULL) AS "ownerIsMember"
         FROM api_keys k
         LEFT JOIN users u ON u.id = k.user_id
         LEFT JOIN memberships m ON m.org_id = k.org_id AND m.user_id = k.user_id
        WHERE ${conditions.join(' AND ')} AND $2::timestamptz IS NOT NULL
        ORDER BY k.created_at DESC, k.id DESC
        LIMIT $${values.length}`,
      values,
    );
  }

  /** The same for an org admin: any key bound to `orgId`. */
  async revokeInOrg(orgId: string, keyId: string, at: Date, write: RevokeWrite): Promise<RevokedKey | null> {
    return this.revokeWriting('org_id', orgId, keyId, at, write);
  }

  /** The same whoever owns the key: a key reported as leaked (same statement as DELETE /api-keys/{id}). */
  async revokeAny(keyId: string, at: Date, manager?: EntityManager): Promise<RevokedKey | null> {
    return this.revokeWhere('id', keyId, keyId, at, manager);
  }

  /** Keys by lookup, for checking reported leaks (the caller compares hashes in constant time). */
  async findByLookups(lookups: string[]): Promise<Array<{ id: string; orgId: string; lookup: string; keyHash: Buffer }>> {
    // A rotated key's replaced secret (still verifying during its grace) is a secret of the key too.
    const rows: Array<{ id: string; org_id: string; lookup: string; key_hash: Buffer }> = await this.db.query(
      `SELECT id, org_id, lookup, key_hash FROM api_keys WHERE lookup = ANY($1::text[])
       UNION ALL
       SELECT id, org_id, previous_lookup, previous_key_hash FROM api_keys
        WHERE previous_lookup = ANY($1::text[]) AND previous_key_hash IS NOT NULL`,
      [lookups],
    );
    return rows.map((r) => ({ id: r.id, orgId: r.org_id, lookup: r.lookup, keyHash: r.key_hash }));
  }

  /**
   * A revoke as one statement and one commit: the key, its audit event and its outbox event
   * (each only when this statement revoked it) in one round trip, so a revoke under load waits
   * for the database once, not five times (transaction, update, audit, outbox, commit).
   */
  private async revokeWriting(column: 'user_id' | 'org_id', owner: string, keyId: string, at: Date, write: RevokeWrite): Promise<RevokedKey | null> {
    const parts = [`r AS (${revokeSql(column)})`, `changed AS (SELECT * FROM r WHERE was IS NULL)`];
    const values: unknown[] = [keyId, owner, at];
    if (write.audit) {
      values.push(auditTemplateJson(write.audit.template));
      const details = [`'name', ${scrubCredentialsSql('r.name')}`, ...(write.audit.withOwner ? [`'owner_id', r.user_id`] : [])];
      parts.push(`a AS (${auditInsertPerRowSql(values.length, 'changed', `jsonb_build_object(${details.join(', ')})`)})`);
    }
    if (write.event) {
      values.push(write.event.revokedBy);
      parts.push(`o AS (${keyEventPerRowSql('api_key.revoked', 'changed', `jsonb_build_object('revoked_by', $${values.length}::uuid)`)})`);
    }
    const name = `kui_revoke_${column}${write.audit ? (write.audit.withOwner ? '_ao' : '_a') : ''}${write.event ? '_e' : ''}`;
    const { rows } = await this.pool().query<RevokedRow>({ name, text: `WITH ${parts.join(',\n')}\nSELECT * FROM r`, values });
    return revokedKey(rows[0]);
  }

  private async revokeWhere(column: 'user_id' | 'org_id' | 'id', owner: string, keyId: string, at: Date, manager?: EntityManager): Promise<RevokedKey | null> {
    const rows = returnedRows<RevokedRow>(await (manager ?? this.db.manager).query(revokeSql(column), [keyId, owner, at]));
    return revokedKey(rows[0]);
  }

  /**
   * Hot path. Bypasses TypeORM's entity machinery and uses a named (prepared) statement on the
   * driver's pool: measured several times faster than `findOne` per request (see bench/).
   */
  async findForVerification(lookups: string[], withDirectory: boolean, day: string): Promise<KeyVerificationRow[]> {
    const pool = this.pool();
    const result = await pool.query<RawVerificationRow>({
      name: withDirectory ? 'kui_verify_keys_dir' : 'kui_verify_keys',
      text: withDirectory ? VERIFY_WITH_DIRECTORY_SQL : VERIFY_KEYS_ONLY_SQL,
      values: [lookups, day],
    });
    return result.rows.map(toVerificationRow);
  }

  /** Write-behind of `last_used_at`, batched; never moves it more often than once a minute. */
  async touchLastUsed(ids: string[], at: Date[]): Promise<void> {
    await this.pool().query({
      name: 'kui_touch_last_used',
      text: `UPDATE api_keys k SET last_used_at = v.at
               FROM unnest($1::uuid[], $2::timestamptz[]) AS v(id, at)
              WHERE k.id = v.id AND (k.last_used_at IS NULL OR k.last_used_at <= v.at - interval '1 minute')`,
      values: [ids, at],
    });
  }

  private pool(): Pool {
    return pgPool(this.db);
  }
}
