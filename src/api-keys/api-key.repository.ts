import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import type { KeysetPosition } from '../common/pagination.js';
import { returnedRows } from '../database/transactions.js';
import type { KeyEventFields } from '../events/event-types.js';
import type { ApiKeyEntity } from './api-key.entity.js';
import {
  CLEAR_LAPSED_PREVIOUS_SQL,
  ENTITY_COLUMNS,
  FIND_BY_LOOKUPS_SQL,
  FIND_OWNERSHIP_SQL,
  KEY_STANDING_SQL,
  keyPageSql,
  revokeSql,
  ROTATE_SQL,
  type RevokeScope,
} from './api-key.sql.js';
import type { KeyState } from './key-state.js';
import type { KeyControls } from './control-owners.js';
import { KEY_SETTINGS_COLUMNS, updateSettingsSql, type SettingsColumns } from './key-settings.sql.js';

/** The secret a rotation puts in place. */
export interface NewSecret {
  lookup: string;
  last4: string;
  keyHash: Buffer;
}

/** A key as its owner's list shows it, with its state (key-state.ts). */
export interface KeyRow extends ApiKeyEntity {
  state: KeyState;
}

/** A key of an org as its admins see it: with the owner's e-mail and whether they are still a member. */
export interface OrgKeyRow extends KeyRow {
  ownerEmail: string | null;
  ownerIsMember: boolean;
  /** `service`: the key is a service key, held by the org's service account. */
  ownerKind: 'person' | 'service' | null;
}

export interface KeyListFilter {
  orgId: string | null;
  state: KeyState | null;
  /** Keys strictly after this position in (created_at DESC, id DESC) order. */
  after: KeysetPosition | null;
  /** Rows to read: the page size plus one look-ahead row. */
  take: number;
  /** The instant `state` is judged at. */
  now: Date;
}

/** A key's scopes and controls, read under its row's lock before a change of its settings. */
export type LockedKey = KeyControls & { scopes: string[] };

/** Whether a key of the caller can still change, and the org whose policy governs it. */
export interface KeyStanding {
  revokedAt: Date | null;
  expiresAt: Date | null;
  orgId: string;
}

export interface OrgKeyFilter {
  orgId: string;
  state?: KeyState;
  userId?: string;
  now: Date;
}

/** What a revoke touched: the masked facts an event about the key carries, and whether it changed. */
export interface RevokedKey extends KeyEventFields {
  /** It was revoked before: nothing changed. */
  alreadyRevoked: boolean;
}

/** The row a revoke statement returns (revokeSql): `was` is revoked_at before it. */
export interface RevokedRow {
  id: string;
  org_id: string;
  user_id: string;
  name: string;
  was: Date | null;
  lookup: string;
  last4: string;
  scopes: string[];
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
}

export const revokedKey = (row: RevokedRow | undefined): RevokedKey | null =>
  row
    ? {
        id: row.id,
        orgId: row.org_id,
        userId: row.user_id,
        name: row.name,
        alreadyRevoked: row.was !== null,
        lookup: row.lookup,
        last4: row.last4,
        scopes: row.scopes,
        createdAt: row.created_at,
        expiresAt: row.expires_at,
        revokedAt: row.revoked_at,
      }
    : null;

/**
 * Key management: list, rotate, revoke in a transaction, the leak matching and the previous-secret
 * sweep (the one-statement mint and revoke are ApiKeyWriteRepository's). Reaches the database one
 * way: `.query` with the SQL text of api-key.sql.ts, on the unit of work's EntityManager when the
 * change is part of a transaction (KeyChanges), else on the DataSource's.
 */
@Injectable()
export class ApiKeyRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Erasure: clears the metadata of every key the user owns, in any state (null, as if never
   * set): what an admin wrote there may name the person. Returns how many keys had any.
   */
  async clearMetadataOfUser(userId: string): Promise<number> {
    const rows = returnedRows<{ id: string }>(
      await this.db.query(
        `UPDATE api_keys SET metadata = NULL WHERE user_id = $1 AND metadata IS NOT NULL RETURNING id`,
        [userId],
      ),
    );
    return rows.length;
  }

  /** One page of the caller's keys, newest first; revoked and expired included unless filtered. */
  listOwned(userId: string, filter: KeyListFilter): Promise<KeyRow[]> {
    const { text, values } = keyPageSql({ scope: { userId }, ...filter }, false);
    return this.db.query(text, values);
  }

  /** Every key bound to an org, whoever minted it, newest first: `limit + 1` rows after `after` (keyset). */
  listInOrg(filter: OrgKeyFilter, after: KeysetPosition | null, limit: number): Promise<OrgKeyRow[]> {
    const { text, values } = keyPageSql(
      {
        scope: { orgId: filter.orgId },
        userId: filter.userId,
        state: filter.state,
        after,
        take: limit + 1,
        now: filter.now,
      },
      true,
    );
    return this.db.query(text, values);
  }

  /** Who owns a key and which org it is bound to; null when there is no such key. */
  async findOwnership(keyId: string): Promise<{ userId: string; orgId: string } | null> {
    const rows: Array<{ userId: string; orgId: string }> = await this.db.query(FIND_OWNERSHIP_SQL, [keyId]);
    return rows[0] ?? null;
  }

  /**
   * Rotation (ROTATE_SQL): only an active key of the caller rotates; otherwise null (and
   * `keyStanding` tells a missing key from a revoked or expired one).
   */
  async rotateOwned(
    userId: string,
    keyId: string,
    secret: NewSecret,
    now: Date,
    graceEndsAt: Date | null,
    manager: EntityManager = this.db.manager,
  ): Promise<ApiKeyEntity | null> {
    const rows = returnedRows<ApiKeyEntity>(
      await manager.query(ROTATE_SQL, [keyId, userId, secret.lookup, secret.last4, secret.keyHash, now, graceEndsAt]),
    );
    return rows[0] ?? null;
  }

  /** A key's settings (updateSettingsSql), in the unit of work's transaction; null for no such key in the scope. */
  async updateSettings(
    scope: 'user_id' | 'org_id' | 'id',
    owner: string,
    keyId: string,
    change: SettingsColumns,
    manager: EntityManager = this.db.manager,
  ): Promise<ApiKeyEntity | null> {
    const { text, values } = updateSettingsSql(scope, change, ENTITY_COLUMNS);
    return returnedRows<ApiKeyEntity>(await manager.query(text, [keyId, owner, ...values]))[0] ?? null;
  }

  /** A key's holder, org and scopes, for its scope usage; null for no such key. */
  async scopeHolding(keyId: string): Promise<{ userId: string; orgId: string; scopes: string[] } | null> {
    const rows = await this.db.query<Array<{ userId: string; orgId: string; scopes: string[] }>>(
      `SELECT user_id AS "userId", org_id AS "orgId", scopes FROM api_keys WHERE id = $1`,
      [keyId],
    );
    return rows[0] ?? null;
  }

  /** Per scope, a key's requests and last use on the UTC days from `since` (YYYY-MM-DD) on. */
  async scopeUse(keyId: string, since: string): Promise<Array<{ scope: string; requests: number; lastUsedAt: Date }>> {
    return this.db.query<Array<{ scope: string; requests: number; lastUsedAt: Date }>>(
      `SELECT scope, sum(requests)::float8 AS requests, max(last_used_at) AS "lastUsedAt"
         FROM api_key_scope_usage WHERE key_id = $1 AND day >= $2::date GROUP BY scope`,
      [keyId, since],
    );
  }

  /** Scope usage older than `before` (YYYY-MM-DD), which no request can ask for any more; the rows deleted. */
  async pruneScopeUse(before: string): Promise<number> {
    const deleted = await this.db.query<unknown>(`DELETE FROM api_key_scope_usage WHERE day < $1::date RETURNING day`, [
      before,
    ]);
    return returnedRows<{ day: string }>(deleted).length;
  }

  /**
   * The scopes and controls a key holds, its row locked until the transaction ends (a change checked
   * against them: a narrowing of scopes, an owner's change of an admin's control); null for no such key in the scope.
   */
  async lockForChange(
    scope: 'user_id' | 'org_id' | 'id',
    owner: string,
    keyId: string,
    manager: EntityManager,
  ): Promise<LockedKey | null> {
    const rows = await manager.query<LockedKey[]>(
      `SELECT k.scopes, ${KEY_SETTINGS_COLUMNS} FROM api_keys k WHERE k.id = $1::uuid AND k.${scope} = $2::uuid FOR UPDATE`,
      [keyId, owner],
    );
    return rows[0] ?? null;
  }

  /** Why a key of the caller cannot be rotated: null when there is no such key of theirs. */
  async keyStanding(
    userId: string,
    keyId: string,
    manager: EntityManager = this.db.manager,
  ): Promise<KeyStanding | null> {
    const rows: KeyStanding[] = await manager.query(KEY_STANDING_SQL, [keyId, userId]);
    return rows[0] ?? null;
  }

  /** The bare revoke (revokeSql), in the caller's transaction: whoever owns the key when `scope` is `id` (a reported leak). */
  async revoke(
    scope: RevokeScope,
    owner: string,
    keyId: string,
    at: Date,
    manager: EntityManager = this.db.manager,
  ): Promise<RevokedKey | null> {
    return revokedKey(returnedRows<RevokedRow>(await manager.query(revokeSql(scope), [keyId, owner, at]))[0]);
  }

  /**
   * Keys by lookup, for checking reported leaks (the caller compares hashes in constant time). A
   * rotated key's previous secret counts only while its grace runs at `now`.
   */
  findByLookups(
    lookups: string[],
    now: Date,
  ): Promise<Array<{ id: string; orgId: string; lookup: string; keyHash: Buffer }>> {
    return this.db.query(FIND_BY_LOOKUPS_SQL, [lookups, now]);
  }

  /** Clears every previous secret whose grace ended by `now`; returns how many keys it cleared. */
  async clearLapsedPreviousSecrets(now: Date): Promise<number> {
    return returnedRows<{ id: string }>(await this.db.query(CLEAR_LAPSED_PREVIOUS_SQL, [now])).length;
  }
}
