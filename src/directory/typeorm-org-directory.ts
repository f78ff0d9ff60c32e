import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import type { Plan, Role } from '../common/roles.js';
import {
  memberKey,
  OrgDirectory,
  type DirectoryPage,
  type MemberContext,
  type MintStanding,
  type OrgMemberSummary,
  type UserOrgSummary,
} from './org-directory.js';
import { pgPool } from '../database/pg-pool.js';
import { orgPeopleCountSql } from './org-people.sql.js';
import type { UserKind } from './user.entity.js';

interface MemberRow {
  user_id: string;
  org_id: string;
  email: string;
  role: Role;
  plan: Plan;
  member_count: number;
  kind: UserKind;
}

const toContext = (r: MemberRow): MemberContext => ({
  userId: r.user_id,
  orgId: r.org_id,
  email: r.email,
  role: r.role,
  plan: r.plan,
  memberCount: Number(r.member_count),
  ...(r.kind === 'service' ? { service: true } : {}),
});

const MEMBER_SELECT = `
  SELECT m.user_id, m.org_id, u.email, m.role, o.plan, u.kind,
         ${orgPeopleCountSql('m.org_id')} AS member_count
    FROM memberships m
    JOIN users u ON u.id = m.user_id
    JOIN orgs o ON o.id = m.org_id`;

const USER_ORGS_SQL = `${MEMBER_SELECT}
   WHERE m.user_id = $1 AND ($2::uuid IS NULL OR m.org_id = $2::uuid)
   ORDER BY m.created_at
   LIMIT $3`;

/** The default directory: this module's own tables, each answer one statement. */
@Injectable()
export class TypeOrmOrgDirectory extends OrgDirectory {
  override readonly ownTables = true;

  constructor(@InjectDataSource() private readonly db: DataSource) {
    super();
  }

  async mintStanding(userId: string, orgId: string): Promise<MintStanding | null> {
    // Missing org and foreign org produce the same empty result through the same statement.
    const rows: Array<{ role: Role; has_workspace: boolean }> = await this.db.query(
      `SELECT m.role,
              EXISTS (SELECT 1 FROM workspaces w WHERE w.org_id = m.org_id AND w.user_id = m.user_id) AS has_workspace
         FROM memberships m
        WHERE m.org_id = $1 AND m.user_id = $2`,
      [orgId, userId],
    );
    return rows[0] ? { role: rows[0].role, hasWorkspace: rows[0].has_workspace } : null;
  }

  async memberContexts(pairs: ReadonlyArray<{ userId: string; orgId: string }>): Promise<Map<string, MemberContext>> {
    const result = new Map<string, MemberContext>();
    if (pairs.length === 0) return result;
    const rows: MemberRow[] = await this.db.query(
      `${MEMBER_SELECT}
        JOIN unnest($1::uuid[], $2::uuid[]) AS p(user_id, org_id) ON p.user_id = m.user_id AND p.org_id = m.org_id`,
      [pairs.map((p) => p.userId), pairs.map((p) => p.orgId)],
    );
    for (const row of rows) result.set(memberKey(row.user_id, row.org_id), toContext(row));
    return result;
  }

  // Every session request resolves its org here: a named statement on the driver's pool skips
  // TypeORM's query runner and PostgreSQL's parse/plan on each call (see bench/).
  async userOrgs(userId: string, orgId: string | null, limit: number): Promise<MemberContext[]> {
    const result = await this.pool().query<MemberRow>({
      name: 'kui_user_orgs',
      text: USER_ORGS_SQL,
      values: [userId, orgId, limit],
    });
    return result.rows.map(toContext);
  }

  async orgPlan(orgId: string): Promise<Plan | null> {
    const rows: Array<{ plan: Plan }> = await this.db.query(`SELECT plan FROM orgs WHERE id = $1`, [orgId]);
    return rows[0]?.plan ?? null;
  }

  // memberships.created_at comes from now() (microseconds) while cursors carry milliseconds: order
  // and compare on the millisecond so a page boundary never skips or repeats a row.
  override async listUserOrgs(userId: string, page: DirectoryPage): Promise<UserOrgSummary[]> {
    return this.db.query(
      `SELECT o.id, o.name, o.plan, m.role, date_trunc('milliseconds', m.created_at) AS "createdAt"
         FROM memberships m JOIN orgs o ON o.id = m.org_id
        WHERE m.user_id = $1 AND ($2::timestamptz IS NULL OR (date_trunc('milliseconds', m.created_at), m.org_id) < ($2::timestamptz, $3::uuid))
        ORDER BY date_trunc('milliseconds', m.created_at) DESC, m.org_id DESC
        LIMIT $4`,
      [userId, page.after?.createdAt ?? null, page.after?.id ?? null, page.limit + 1],
    );
  }

  override async listMembers(orgId: string, page: DirectoryPage): Promise<OrgMemberSummary[]> {
    return this.db.query(
      `SELECT u.id, u.email, m.role, date_trunc('milliseconds', m.created_at) AS "createdAt"
         FROM memberships m JOIN users u ON u.id = m.user_id
        WHERE m.org_id = $1 AND u.kind = 'person' AND ($2::timestamptz IS NULL OR (date_trunc('milliseconds', m.created_at), m.user_id) < ($2::timestamptz, $3::uuid))
        ORDER BY date_trunc('milliseconds', m.created_at) DESC, m.user_id DESC
        LIMIT $4`,
      [orgId, page.after?.createdAt ?? null, page.after?.id ?? null, page.limit + 1],
    );
  }

  private pool(): Pool {
    return pgPool(this.db);
  }
}
