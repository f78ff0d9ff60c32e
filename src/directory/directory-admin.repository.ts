import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { Plan, Role } from '../common/roles.js';

export interface OrgRow { id: string; name: string; plan: Plan }
export interface UserRow { id: string; email: string }
export interface MembershipRow { org_id: string; user_id: string; role: Role }
export interface WorkspaceRow { id: string; org_id: string; user_id: string }

/** Writes to the built-in directory tables, for the operator CLI. One statement per call. */
@Injectable()
export class DirectoryAdminRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  private async one<T>(sql: string, params: unknown[]): Promise<T | null> {
    const result: unknown = await this.db.query(sql, params);
    const rows = Array.isArray(result) && Array.isArray(result[0]) ? (result[0] as T[]) : (result as T[]);
    return rows[0] ?? null;
  }

  createOrg(name: string, plan: Plan): Promise<OrgRow | null> {
    return this.one(`INSERT INTO orgs (name, plan) VALUES ($1, $2) RETURNING id, name, plan`, [name, plan]);
  }

  setPlan(orgId: string, plan: Plan): Promise<OrgRow | null> {
    return this.one(`UPDATE orgs SET plan = $2 WHERE id = $1 RETURNING id, name, plan`, [orgId, plan]);
  }

  findOrg(orgId: string): Promise<OrgRow | null> {
    return this.one(`SELECT id, name, plan FROM orgs WHERE id = $1`, [orgId]);
  }

  /** Null when the e-mail is taken (case-insensitively) or the id exists. */
  createUser(email: string, id: string | null): Promise<UserRow | null> {
    return this.one(
      `INSERT INTO users (id, email) VALUES (COALESCE($2::uuid, gen_random_uuid()), $1)
       ON CONFLICT DO NOTHING RETURNING id, email`,
      [email, id],
    );
  }

  findUser(userId: string): Promise<UserRow | null> {
    return this.one(`SELECT id, email FROM users WHERE id = $1`, [userId]);
  }

  upsertMember(orgId: string, userId: string, role: Role): Promise<MembershipRow | null> {
    return this.one(
      `INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, $3)
       ON CONFLICT (org_id, user_id) DO UPDATE SET role = EXCLUDED.role
       RETURNING org_id, user_id, role`,
      [orgId, userId, role],
    );
  }

  removeMember(orgId: string, userId: string): Promise<MembershipRow | null> {
    return this.one(`DELETE FROM memberships WHERE org_id = $1 AND user_id = $2 RETURNING org_id, user_id, role`, [orgId, userId]);
  }

  /** Idempotent: connecting a repository twice keeps the first workspace. */
  async createWorkspace(orgId: string, userId: string): Promise<WorkspaceRow | null> {
    return this.one(
      `WITH ins AS (
         INSERT INTO workspaces (org_id, user_id) VALUES ($1, $2) ON CONFLICT (org_id, user_id) DO NOTHING
         RETURNING id, org_id, user_id)
       SELECT id, org_id, user_id FROM ins
       UNION ALL SELECT id, org_id, user_id FROM workspaces WHERE org_id = $1 AND user_id = $2
       LIMIT 1`,
      [orgId, userId],
    );
  }

  isMember(orgId: string, userId: string): Promise<MembershipRow | null> {
    return this.one(`SELECT org_id, user_id, role FROM memberships WHERE org_id = $1 AND user_id = $2`, [orgId, userId]);
  }
}
