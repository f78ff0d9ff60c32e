import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { returnedRows } from '../database/transactions.js';
import type { Plan, Role } from '../common/roles.js';

export interface OrgRow {
  id: string;
  name: string;
  plan: Plan;
}
export interface UserRow {
  id: string;
  email: string;
}
export interface MembershipRow {
  org_id: string;
  user_id: string;
  role: Role;
}
export interface WorkspaceRow {
  id: string;
  org_id: string;
  user_id: string;
}
/** A membership after an upsert, with the role it had before (null: it is new). */
export interface UpsertedMembershipRow extends MembershipRow {
  previous_role: Role | null;
}
export interface PlanChangeRow extends OrgRow {
  previous_plan: Plan;
}
export interface CreatedWorkspaceRow extends WorkspaceRow {
  created: boolean;
}

/**
 * Writes to the built-in directory tables, for the operator CLI. One statement per call; a
 * write takes the manager of the transaction that also records its audit event.
 */
@Injectable()
export class DirectoryAdminRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  private async one<T>(sql: string, params: unknown[], manager?: EntityManager): Promise<T | null> {
    const result: unknown = await (manager ?? this.db.manager).query(sql, params);
    return returnedRows<T>(result)[0] ?? null;
  }

  createOrg(name: string, plan: Plan, manager?: EntityManager): Promise<OrgRow | null> {
    return this.one(`INSERT INTO orgs (name, plan) VALUES ($1, $2) RETURNING id, name, plan`, [name, plan], manager);
  }

  setPlan(orgId: string, plan: Plan, manager?: EntityManager): Promise<PlanChangeRow | null> {
    return this.one(
      `UPDATE orgs o SET plan = $2
         FROM (SELECT id, plan AS previous_plan FROM orgs WHERE id = $1 FOR UPDATE) old
        WHERE o.id = old.id
        RETURNING o.id, o.name, o.plan, old.previous_plan`,
      [orgId, plan],
      manager,
    );
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

  upsertMember(
    orgId: string,
    userId: string,
    role: Role,
    manager?: EntityManager,
  ): Promise<UpsertedMembershipRow | null> {
    // The CTE reads the row as it was before this statement: the previous role, if any.
    return this.one(
      `WITH old AS (SELECT role FROM memberships WHERE org_id = $1 AND user_id = $2)
       INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, $3)
       ON CONFLICT (org_id, user_id) DO UPDATE SET role = EXCLUDED.role
       RETURNING org_id, user_id, role, (SELECT role FROM old) AS previous_role`,
      [orgId, userId, role],
      manager,
    );
  }

  removeMember(orgId: string, userId: string, manager?: EntityManager): Promise<MembershipRow | null> {
    return this.one(
      `DELETE FROM memberships WHERE org_id = $1 AND user_id = $2 RETURNING org_id, user_id, role`,
      [orgId, userId],
      manager,
    );
  }

  /** Idempotent: connecting a repository twice keeps the first workspace (`created` false). */
  async createWorkspace(orgId: string, userId: string, manager?: EntityManager): Promise<CreatedWorkspaceRow | null> {
    return this.one(
      `WITH ins AS (
         INSERT INTO workspaces (org_id, user_id) VALUES ($1, $2) ON CONFLICT (org_id, user_id) DO NOTHING
         RETURNING id, org_id, user_id)
       SELECT id, org_id, user_id, true AS created FROM ins
       UNION ALL SELECT id, org_id, user_id, false AS created FROM workspaces WHERE org_id = $1 AND user_id = $2
       LIMIT 1`,
      [orgId, userId],
      manager,
    );
  }

  isMember(orgId: string, userId: string): Promise<MembershipRow | null> {
    return this.one(`SELECT org_id, user_id, role FROM memberships WHERE org_id = $1 AND user_id = $2`, [
      orgId,
      userId,
    ]);
  }
}
