import { Injectable, Module } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  memberKey,
  OrgDirectory,
  type MemberContext,
  type MintStanding,
  type Plan,
  type Role,
} from '../../src/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { Seeder } from '../support/seed.js';
import { PLATFORMS, startHost, type HostApp } from './support/host-app.js';

/** The host's own account store: here in memory, in a real host its own tables or services. */
@Injectable()
class HostAccounts {
  readonly orgs = new Map<string, { plan: Plan }>();
  readonly members = new Map<
    string,
    { userId: string; orgId: string; email: string; role: Role; hasWorkspace: boolean }
  >();

  addMember(orgId: string, role: Role, plan: Plan = 'free') {
    if (!this.orgs.has(orgId)) this.orgs.set(orgId, { plan });
    const userId = randomUUID();
    const email = `${userId.slice(0, 8)}@host.example`;
    this.members.set(memberKey(userId, orgId), { userId, orgId, email, role, hasWorkspace: true });
    return { userId, email };
  }
}

@Module({ providers: [HostAccounts], exports: [HostAccounts] })
class HostAccountsModule {}

/** The host's OrgDirectory: the module reads orgs, users and memberships only through it. */
@Injectable()
class HostOrgDirectory extends OrgDirectory {
  constructor(private readonly accounts: HostAccounts) {
    super();
  }

  private context(m: { userId: string; orgId: string; email: string; role: Role }): MemberContext {
    const memberCount = [...this.accounts.members.values()].filter((x) => x.orgId === m.orgId).length;
    return {
      userId: m.userId,
      orgId: m.orgId,
      email: m.email,
      role: m.role,
      plan: this.accounts.orgs.get(m.orgId)!.plan,
      memberCount,
    };
  }

  async mintStanding(userId: string, orgId: string): Promise<MintStanding | null> {
    const m = this.accounts.members.get(memberKey(userId, orgId));
    return m ? { role: m.role, hasWorkspace: m.hasWorkspace } : null;
  }

  async memberContexts(pairs: ReadonlyArray<{ userId: string; orgId: string }>): Promise<Map<string, MemberContext>> {
    const out = new Map<string, MemberContext>();
    for (const p of pairs) {
      const m = this.accounts.members.get(memberKey(p.userId, p.orgId));
      if (m) out.set(memberKey(p.userId, p.orgId), this.context(m));
    }
    return out;
  }

  async userOrgs(userId: string, orgId: string | null, limit: number): Promise<MemberContext[]> {
    return [...this.accounts.members.values()]
      .filter((m) => m.userId === userId && (orgId === null || m.orgId === orgId))
      .slice(0, limit)
      .map((m) => this.context(m));
  }

  async orgPlan(orgId: string): Promise<Plan | null> {
    return this.accounts.orgs.get(orgId)?.plan ?? null;
  }
}

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  // With its own directory, the host needs none of the module's directory tables.
  await db.pool.query(`DROP TABLE workspaces, memberships, users, orgs`);
});
afterAll(async () => db?.drop());

describe.each(PLATFORMS)('a host on %s with its own OrgDirectory', (platform) => {
  let host: HostApp;
  let accounts: HostAccounts;
  const seed = () => new Seeder(db.pool);

  beforeAll(async () => {
    host = await startHost({
      platform,
      databaseUrl: db.url,
      orgDirectory: HostOrgDirectory,
      directoryImports: [HostAccountsModule],
    });
    accounts = host.app.get(HostAccounts, { strict: false });
  });
  afterAll(async () => host?.close());

  async function memberWithKey(role: Role, scopes: string[], plan: Plan = 'free') {
    const orgId = randomUUID();
    const { userId, email } = accounts.addMember(orgId, role, plan);
    const session = seed().session(userId, email);
    const minted = await host.api.post('/api-keys', session, { org_id: orgId, scopes });
    expect(minted.status).toBe(201);
    return { orgId, userId, email, session, key: minted.body.key as string, keyId: minted.body.id as string };
  }

  it('mints keys for its users through POST /api-keys and verifies them against its directory', async () => {
    const m = await memberWithKey('owner', ['decisions:read', 'decisions:write'], 'pro');
    const me = await host.api.get('/me', m.key);
    expect(me.status).toBe(200);
    expect(me.body).toEqual({
      user_id: m.userId,
      org_id: m.orgId,
      email: m.email,
      scopes: ['decisions:read', 'decisions:write'],
      org_role: 'owner',
      org_member_count: 1,
    });

    expect((await host.api.post('/decisions', m.key, { title: 'x' })).status).toBe(201);
    const usage = await host.api.get('/usage', m.key);
    expect(usage.body).toMatchObject({ plan: 'pro', captures: { used: 1, limit: 100 } });
    const { rows } = await db.pool.query(`SELECT to_regclass('memberships') AS t`);
    expect(rows[0].t).toBeNull();
  });

  it("follows the host's directory on every request: a lowered role cuts the key's scopes, a removed member's key is refused", async () => {
    const m = await memberWithKey('member', ['decisions:write']);
    expect((await host.api.post('/decisions', m.key, {})).status).toBe(201);

    accounts.members.get(memberKey(m.userId, m.orgId))!.role = 'viewer';
    expect((await host.api.post('/decisions', m.key, {})).status).toBe(403);

    accounts.members.delete(memberKey(m.userId, m.orgId));
    const res = await host.api.post('/decisions', m.key, {});
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token"/);
  });

  it("answers 404 to a mint in an org the host's directory does not place the user in, and 409 without a workspace", async () => {
    const m = await memberWithKey('owner', []);
    const stranger = await host.api.post('/api-keys', m.session, { org_id: randomUUID() });
    expect(stranger.status).toBe(404);

    accounts.members.get(memberKey(m.userId, m.orgId))!.hasWorkspace = false;
    const noWorkspace = await host.api.post('/api-keys', m.session, { org_id: m.orgId });
    expect(noWorkspace.status).toBe(409);
  });

  it('lists and revokes keys of its users, after which the key is refused', async () => {
    const m = await memberWithKey('admin', ['decisions:read']);
    const list = await host.api.get('/api-keys', m.session);
    expect(list.body.keys.map((k: { id: string }) => k.id)).toEqual([m.keyId]);
    expect((await host.api.delete(`/api-keys/${m.keyId}`, m.session)).status).toBe(204);
    expect((await host.api.get('/me', m.key)).status).toBe(401);
  });

  it("answers 501 to the service-key routes: service accounts live in the built-in directory's tables only", async () => {
    const m = await memberWithKey('owner', []);
    for (const res of [
      await host.api.post(`/orgs/${m.orgId}/service-keys`, m.session, {}),
      await host.api.get(`/orgs/${m.orgId}/service-keys`, m.session),
    ]) {
      expect(res.status, res.text).toBe(501);
      expect(res.body.message).toMatch(/built-in org directory/);
    }
  });
});
