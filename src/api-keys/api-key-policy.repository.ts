import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { returnedRows } from '../database/transactions.js';
import type { KeyEventFields } from '../events/event-types.js';
import { revokedKey, type RevokedKey, type RevokedRow } from './api-key.repository.js';
import {
  CAP_LIFETIME_SQL,
  DECIDE_SQL,
  POLICY_LOCK_SQL,
  KEY_APPROVAL_SQL,
  REVOKE_STALE_SQL,
  STALE_KEYS_SQL,
  WARN_STALE_SQL,
} from './api-key-policy.sql.js';

export type Decision = 'approve' | 'deny';

/** A key warned of its stale revoke, with the time it has been idle since. */
export interface WarnedKey extends KeyEventFields {
  idleSince: Date;
}

const facts = (rows: RevokedRow[]): RevokedKey[] => rows.map((r) => revokedKey(r)!);

/**
 * The changes to api_keys that the org's key policy drives (api-key-policy.sql.ts): the lifetime
 * cap, the approval decision and the stale sweep. On the unit of work's manager (KeyChanges) when
 * part of a transaction, else on the DataSource's.
 */
@Injectable()
export class ApiKeyPolicyRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * The org's keys that outlive `days` from their creation, now expiring at that limit. The
   * policy lock first, in its own statement: the cap's snapshot then includes every mint that
   * held the lock before it, and mints after it wait for the policy's commit.
   */
  async capLifetime(orgId: string, days: number, now: Date, manager: EntityManager): Promise<RevokedKey[]> {
    await manager.query(POLICY_LOCK_SQL, [orgId]);
    return facts(returnedRows<RevokedRow>(await manager.query(CAP_LIFETIME_SQL, [orgId, days, now])));
  }

  /** Approves or denies a pending key of the org; null when the org has no such pending key. */
  async decide(
    orgId: string,
    keyId: string,
    decision: Decision,
    at: Date,
    manager: EntityManager,
  ): Promise<RevokedKey | null> {
    return facts(returnedRows<RevokedRow>(await manager.query(DECIDE_SQL, [keyId, orgId, decision, at])))[0] ?? null;
  }

  /** A key of the org's approval mark and revocation; null when the org has no such key. */
  async approvalOf(
    orgId: string,
    keyId: string,
  ): Promise<{ approval: 'pending' | 'denied' | null; revokedAt: Date | null } | null> {
    const rows: Array<{ approval: 'pending' | 'denied' | null; revokedAt: Date | null }> = await this.db.query(
      KEY_APPROVAL_SQL,
      [keyId, orgId],
    );
    return rows[0] ?? null;
  }

  /** Marks up to `limit` of the org's keys idle since `idleSince` as warned at `now` (once per idle period); returns them. */
  async warnStale(
    orgId: string,
    idleSince: Date,
    now: Date,
    limit: number,
    manager: EntityManager,
  ): Promise<WarnedKey[]> {
    const rows = returnedRows<RevokedRow & { idle_since: Date }>(
      await manager.query(WARN_STALE_SQL, [orgId, idleSince, now, limit]),
    );
    return rows.map((r) => ({ ...revokedKey(r)!, idleSince: r.idle_since }));
  }

  /** Up to `limit` ids of the org's keys idle since `idleSince` (judged at `now`). */
  async staleKeyIds(orgId: string, idleSince: Date, now: Date, limit: number): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.db.query(STALE_KEYS_SQL, [orgId, idleSince, now, limit]);
    return rows.map((r) => r.id);
  }

  /** Revokes one key if it is still stale; null when it was used or revoked meanwhile. */
  async revokeStale(
    orgId: string,
    keyId: string,
    idleSince: Date,
    at: Date,
    manager: EntityManager,
  ): Promise<RevokedKey | null> {
    return (
      facts(returnedRows<RevokedRow>(await manager.query(REVOKE_STALE_SQL, [keyId, orgId, at, idleSince])))[0] ?? null
    );
  }
}
