import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import type { Pool } from 'pg';
import type { DataSource, EntityManager, Repository } from 'typeorm';
import { returnedRows } from '../database/transactions.js';
import type { KeysetPosition } from '../common/pagination.js';
import type { Plan, Role } from '../common/roles.js';
import type { ApiKeyStore, KeyVerificationRow } from '../auth/api-key-store.js';
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

/** What a revoke touched. */
export interface RevokedKey {
  id: string;
  orgId: string;
  userId: string;
  name: string;
  /** It was revoked before: nothing changed. */
  alreadyRevoked: boolean;
  /** The masked facts an event about the key carries (events/event-types.ts). */
  lookup: string;
  last4: string;
  scopes: string[];
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

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

@Injectable()
export class ApiKeyRepository implements ApiKeyStore {
  constructor(
    @InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  /**
   * Inserts a key, inside `manager`'s transaction (the key and its audit event commit together),
   * unless the owner already holds `cap` active keys in its org; null when full. A
   * transaction-scoped advisory lock per (user, org) serialises concurrent mints of the same pair
   * on every instance, so the count and the insert cannot interleave (no over-minting).
   */
  async insertWithinCap(key: NewApiKey, cap: number, manager: EntityManager): Promise<ApiKeyEntity | null> {
    await manager.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 14))`, [`api_keys:${key.userId}:${key.orgId}`]);
    // Counts at most `cap` rows: the work is bounded whatever the caller holds.
    const [{ active }]: Array<{ active: number }> = await manager.query(
      `SELECT count(*)::int AS active FROM (
         SELECT 1 FROM api_keys
          WHERE user_id = $1 AND org_id = $2 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $3)
          LIMIT $4) capped`,
      [key.userId, key.orgId, key.createdAt, cap],
    );
    if (active >= cap) return null;
    const repo = manager.getRepository(ApiKeyEntity);
    return repo.save(repo.create({ ...key, lastUsedAt: null, revokedAt: null }));
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
  async revokeOwned(userId: string, keyId: string, at: Date, manager?: EntityManager): Promise<RevokedKey | null> {
    return this.revokeWhere('user_id', userId, keyId, at, manager);
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
  async revokeInOrg(orgId: string, keyId: string, at: Date, manager?: EntityManager): Promise<RevokedKey | null> {
    return this.revokeWhere('org_id', orgId, keyId, at, manager);
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

  private async revokeWhere(column: 'user_id' | 'org_id' | 'id', owner: string, keyId: string, at: Date, manager?: EntityManager): Promise<RevokedKey | null> {
    // `was` is the revoked_at before this statement: the audit log records only a real change.
    const rows = returnedRows<{
      id: string; org_id: string; user_id: string; name: string; was: Date | null;
      lookup: string; last4: string; scopes: string[]; created_at: Date; expires_at: Date | null; revoked_at: Date | null;
    }>(
      await (manager ?? this.db.manager).query(
        `UPDATE api_keys k SET revoked_at = COALESCE(k.revoked_at, $3)
           FROM (SELECT id, revoked_at AS was FROM api_keys WHERE id = $1 AND ${column} = $2 FOR UPDATE) old
          WHERE k.id = old.id
          RETURNING k.id, k.org_id, k.user_id, k.name, old.was, k.lookup, k.last4, k.scopes, k.created_at, k.expires_at, k.revoked_at`,
        [keyId, owner, at],
      ),
    );
    const row = rows[0];
    return row
      ? {
          id: row.id, orgId: row.org_id, userId: row.user_id, name: row.name, alreadyRevoked: row.was !== null,
          lookup: row.lookup, last4: row.last4, scopes: row.scopes, createdAt: row.created_at, expiresAt: row.expires_at, revokedAt: row.revoked_at,
        }
      : null;
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
