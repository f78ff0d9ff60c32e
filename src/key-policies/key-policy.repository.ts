import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { returnedRows } from '../database/transactions.js';
import type { OrgKeyPolicyEntity } from './key-policy.entity.js';

const COLUMNS = `org_id AS "orgId", max_lifetime_days AS "maxLifetimeDays", require_expiry AS "requireExpiry",
  stale_after_days AS "staleAfterDays", allowed_scopes_by_role AS "allowedScopesByRole",
  approval_required_for AS "approvalRequiredFor", updated_at AS "updatedAt", updated_by AS "updatedBy"`;

const UPSERT_SQL = `INSERT INTO org_key_policies AS p
    (org_id, max_lifetime_days, require_expiry, stale_after_days, allowed_scopes_by_role, approval_required_for, updated_at, updated_by)
  VALUES ($1, $2, $3, $4, $5::jsonb, $6::text[], $7, $8)
  ON CONFLICT (org_id) DO UPDATE SET max_lifetime_days = EXCLUDED.max_lifetime_days, require_expiry = EXCLUDED.require_expiry,
    stale_after_days = EXCLUDED.stale_after_days, allowed_scopes_by_role = EXCLUDED.allowed_scopes_by_role,
    approval_required_for = EXCLUDED.approval_required_for, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by
  RETURNING ${COLUMNS}`;

/** The org_key_policies table: one row per org that set a policy. */
@Injectable()
export class KeyPolicyRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The org's policy; null when it never set one. Read fresh on every mint: a PUT holds at once on every instance. */
  async find(orgId: string): Promise<OrgKeyPolicyEntity | null> {
    const rows: OrgKeyPolicyEntity[] = await this.db.query(
      `SELECT ${COLUMNS} FROM org_key_policies WHERE org_id = $1`,
      [orgId],
    );
    return rows[0] ?? null;
  }

  /** Sets the org's whole policy, in the unit of work's transaction. */
  async save(p: OrgKeyPolicyEntity, manager: EntityManager): Promise<OrgKeyPolicyEntity> {
    const values = [
      p.orgId,
      p.maxLifetimeDays,
      p.requireExpiry,
      p.staleAfterDays,
      p.allowedScopesByRole && JSON.stringify(p.allowedScopesByRole),
      p.approvalRequiredFor,
      p.updatedAt,
      p.updatedBy,
    ];
    return returnedRows<OrgKeyPolicyEntity>(await manager.query(UPSERT_SQL, values))[0];
  }

  /** Every org whose policy revokes stale keys, with its threshold. */
  withStaleThreshold(): Promise<Array<{ orgId: string; staleAfterDays: number }>> {
    return this.db.query(
      `SELECT org_id AS "orgId", stale_after_days AS "staleAfterDays" FROM org_key_policies WHERE stale_after_days IS NOT NULL ORDER BY org_id`,
    );
  }
}
