// The README's OrgDirectory example: a host that keeps orgs and users in its own tables.
import { Injectable, Module } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import {
  KeysUsageIdentityModule,
  memberKey,
  OrgDirectory,
  type MemberContext,
  type MintStanding,
  type Plan,
  type Role,
} from 'keys-usage-identity';
import { HostConfig, HostConfigModule } from './app.module.mjs';

interface AccountRow {
  user_id: string;
  org_id: string;
  email: string;
  role: Role;
  plan: Plan;
  member_count: number;
}

const toContext = (r: AccountRow): MemberContext => ({
  userId: r.user_id,
  orgId: r.org_id,
  email: r.email,
  role: r.role,
  plan: r.plan,
  memberCount: Number(r.member_count),
});

// Illustrative schema: the host's accounts, teams and team_members tables.
const MEMBERS = `
  SELECT tm.account_id AS user_id, tm.team_id AS org_id, a.email, tm.role, t.plan,
         (SELECT count(*) FROM team_members c WHERE c.team_id = tm.team_id) AS member_count
    FROM team_members tm JOIN accounts a ON a.id = tm.account_id JOIN teams t ON t.id = tm.team_id`;

@Injectable()
export class AccountsOrgDirectory extends OrgDirectory {
  constructor(@InjectDataSource() private readonly db: DataSource) {
    super();
  }

  /** Role and "has connected a repository" of a user in an org; null when not a member (or no such org). */
  async mintStanding(userId: string, orgId: string): Promise<MintStanding | null> {
    const rows: Array<{ role: Role; has_workspace: boolean }> = await this.db.query(
      `SELECT role, repo_connected AS has_workspace FROM team_members WHERE account_id = $1 AND team_id = $2`,
      [userId, orgId],
    );
    return rows[0] ? { role: rows[0].role, hasWorkspace: rows[0].has_workspace } : null;
  }

  /** Contexts keyed by memberKey(userId, orgId); leave out pairs that are not memberships. */
  async memberContexts(pairs: ReadonlyArray<{ userId: string; orgId: string }>): Promise<Map<string, MemberContext>> {
    const out = new Map<string, MemberContext>();
    if (pairs.length === 0) return out;
    const rows: AccountRow[] = await this.db.query(
      `${MEMBERS} JOIN unnest($1::uuid[], $2::uuid[]) AS p(u, o) ON p.u = tm.account_id AND p.o = tm.team_id`,
      [pairs.map((p) => p.userId), pairs.map((p) => p.orgId)],
    );
    for (const r of rows) out.set(memberKey(r.user_id, r.org_id), toContext(r));
    return out;
  }

  /** The user's orgs (only `orgId` when given), at most `limit`, in a stable order. */
  async userOrgs(userId: string, orgId: string | null, limit: number): Promise<MemberContext[]> {
    const rows: AccountRow[] = await this.db.query(
      `${MEMBERS} WHERE tm.account_id = $1 AND ($2::uuid IS NULL OR tm.team_id = $2::uuid) ORDER BY tm.joined_at LIMIT $3`,
      [userId, orgId, limit],
    );
    return rows.map(toContext);
  }

  async orgPlan(orgId: string): Promise<Plan | null> {
    const rows: Array<{ plan: Plan }> = await this.db.query(`SELECT plan FROM teams WHERE id = $1`, [orgId]);
    return rows[0]?.plan ?? null;
  }
}

/** How it is wired in: `orgDirectory` names the class; what it injects must be importable by the module. */
@Module({
  imports: [
    KeysUsageIdentityModule.forRootAsync({
      imports: [HostConfigModule /*, the modules whose providers your directory injects */],
      inject: [HostConfig],
      useFactory: (config: HostConfig) => ({
        apiKeySecret: config.apiKeySecret,
        session: { secret: config.sessionSecret },
      }),
      orgDirectory: AccountsOrgDirectory,
    }),
  ],
})
export class AppWithAccountsModule {}
