import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import type { Role } from '../common/roles.js';
import { returnedRows } from '../database/transactions.js';

export interface PersonRow {
  id: string;
  email: string;
  created_at: Date;
}
export interface PersonMembershipRow {
  org_id: string;
  org_name: string;
  role: Role;
  joined_at: Date;
}
export interface PersonWorkspaceRow {
  id: string;
  org_id: string;
  created_at: Date;
}
export interface UsageAttributionRow {
  org_id: string;
  day: string;
  credential_kind: string;
  credential_id: string;
  asks: number;
  retrieves: number;
  imports: number;
  captures: number;
}
/** Keyset position in usage_attribution's primary-key order. */
export type UsagePosition = Pick<UsageAttributionRow, 'org_id' | 'day' | 'credential_kind' | 'credential_id'>;
/** A charge of a deployment's meter by one of the person's credentials (usage_meter_attribution). */
export interface MeterUsageRow {
  org_id: string;
  day: string;
  credential_kind: string;
  credential_id: string;
  meter: string;
  used: number;
}
/** Keyset position in usage_meter_attribution's primary-key order. */
export type MeterUsagePosition = Omit<MeterUsageRow, 'used'>;

/**
 * What the service holds about one person in the directory tables (users, memberships,
 * workspaces) and usage attribution, for their export and erasure. The person's keys and audit
 * events are read and changed through their own features (api-keys, audit).
 */
@Injectable()
export class PersonalDataRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async findUser(userId: string): Promise<PersonRow | null> {
    const rows: PersonRow[] = await this.db.query(
      `SELECT id, email::text AS email, created_at FROM users WHERE id = $1`,
      [userId],
    );
    return rows[0] ?? null;
  }

  memberships(userId: string): Promise<PersonMembershipRow[]> {
    return this.db.query(
      `SELECT m.org_id, o.name AS org_name, m.role, m.created_at AS joined_at
         FROM memberships m JOIN orgs o ON o.id = m.org_id WHERE m.user_id = $1 ORDER BY m.created_at, m.org_id`,
      [userId],
    );
  }

  workspaces(userId: string): Promise<PersonWorkspaceRow[]> {
    return this.db.query(`SELECT id, org_id, created_at FROM workspaces WHERE user_id = $1 ORDER BY created_at, id`, [
      userId,
    ]);
  }

  /** Up to `limit` of the person's usage attribution rows after `after`, in primary-key order. */
  usageBatch(userId: string, after: UsagePosition | null, limit: number): Promise<UsageAttributionRow[]> {
    const values: unknown[] = [userId, limit];
    if (after) values.push(after.org_id, after.day, after.credential_kind, after.credential_id);
    return this.db.query(
      `SELECT org_id, to_char(day, 'YYYY-MM-DD') AS day, credential_kind, credential_id, asks, retrieves, imports, captures
         FROM usage_attribution
        WHERE user_id = $1${after ? ` AND (org_id, day, credential_kind, credential_id) > ($3::uuid, $4::date, $5::text, $6::uuid)` : ''}
        ORDER BY org_id, day, credential_kind, credential_id LIMIT $2`,
      values,
    );
  }

  /** Up to `limit` of the person's rows of the deployment's meters after `after`, in primary-key order. */
  meterUsageBatch(userId: string, after: MeterUsagePosition | null, limit: number): Promise<MeterUsageRow[]> {
    const values: unknown[] = [userId, limit];
    if (after) values.push(after.org_id, after.day, after.credential_kind, after.credential_id, after.meter);
    return this.db.query(
      `SELECT org_id, to_char(day, 'YYYY-MM-DD') AS day, credential_kind, credential_id, meter, used
         FROM usage_meter_attribution
        WHERE user_id = $1${after ? ` AND (org_id, day, credential_kind, credential_id, meter) > ($3::uuid, $4::date, $5::text, $6::uuid, $7::text)` : ''}
        ORDER BY org_id, day, credential_kind, credential_id, meter LIMIT $2`,
      values,
    );
  }

  /** Removes the membership and the workspace of the person in one org, in the caller's transaction; null when not a member. */
  async leaveOrg(orgId: string, userId: string, manager: EntityManager): Promise<{ role: Role } | null> {
    const rows = returnedRows<{ role: Role }>(
      await manager.query(
        `WITH w AS (DELETE FROM workspaces WHERE org_id = $1 AND user_id = $2)
         DELETE FROM memberships WHERE org_id = $1 AND user_id = $2 RETURNING role`,
        [orgId, userId],
      ),
    );
    return rows[0] ?? null;
  }

  /** Workspaces left in orgs the person is no longer a member of (they lost their meaning). */
  async dropWorkspaces(userId: string): Promise<void> {
    await this.db.query(`DELETE FROM workspaces WHERE user_id = $1`, [userId]);
  }

  /** Replaces the e-mail with the tombstone; false when it already was. */
  async tombstone(userId: string, tombstone: string): Promise<boolean> {
    const rows = returnedRows<{ id: string }>(
      await this.db.query(`UPDATE users SET email = $2 WHERE id = $1 AND email <> $2 RETURNING id`, [
        userId,
        tombstone,
      ]),
    );
    return rows.length > 0;
  }
}
