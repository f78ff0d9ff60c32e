import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Plan, Role } from '../../src/common/roles.js';
import { memberKey, type OrgDirectory } from '../../src/directory/org-directory.js';
import { TypeOrmOrgDirectory } from '../../src/directory/typeorm-org-directory.js';
import { FakeDirectory, openRepositoryDatabase, type RepositoryDatabase } from '../support/factories.js';

/**
 * Every statement of TypeOrmOrgDirectory on real PostgreSQL, without the app; and the same
 * checks on FakeDirectory, the in-memory directory the unit specs use, so the fake answers as
 * the tables do.
 */
interface World {
  directory: OrgDirectory;
  org(plan: Plan, name: string): Promise<string>;
  user(): Promise<{ id: string; email: string }>;
  member(orgId: string, userId: string, role: Role, joinedAt: Date): Promise<void>;
  workspace(orgId: string, userId: string): Promise<void>;
}

let r: RepositoryDatabase;
beforeAll(async () => {
  r = await openRepositoryDatabase();
});
afterAll(async () => r?.close());

const worlds: Array<[string, () => World]> = [
  [
    'TypeOrmOrgDirectory',
    () => ({
      directory: new TypeOrmOrgDirectory(r.source),
      org: (plan, name) => r.seed.org(plan, name),
      user: () => r.seed.user(),
      member: (orgId, userId, role, joinedAt) => r.seed.member(orgId, userId, role, joinedAt),
      workspace: (orgId, userId) => r.seed.workspace(orgId, userId),
    }),
  ],
  [
    'FakeDirectory',
    () => {
      const fake = new FakeDirectory();
      return {
        directory: fake,
        org: async (plan, name) => fake.org(plan, randomUUID(), name),
        user: async () => {
          const id = fake.user(randomUUID(), `u-${randomUUID()}@example.com`);
          return { id, email: fake.users.get(id)! };
        },
        member: async (orgId, userId, role, joinedAt) => fake.join(userId, orgId, role, { joinedAt }),
        workspace: async (orgId, userId) => fake.workspace(userId, orgId),
      };
    },
  ],
];

describe.each(worlds)('%s', (_, make) => {
  let w: World;
  let acme: string;
  let globex: string;
  let ada: { id: string; email: string };
  let bob: { id: string; email: string };
  let cy: { id: string; email: string };
  const at = (minute: number) => new Date(Date.UTC(2031, 2, 14, 12, minute, 0, 123));

  beforeAll(async () => {
    w = make();
    acme = await w.org('pro', 'Acme');
    globex = await w.org('free', 'Globex');
    [ada, bob, cy] = [await w.user(), await w.user(), await w.user()];
    await w.member(acme, ada.id, 'owner', at(1));
    await w.member(acme, bob.id, 'viewer', at(2));
    await w.member(acme, cy.id, 'member', at(2));
    await w.member(globex, ada.id, 'viewer', at(3));
    await w.workspace(acme, ada.id);
  });

  it('mintStanding: the role and whether a repository is connected; null for a non-member or an unknown org', async () => {
    expect(await w.directory.mintStanding(ada.id, acme)).toEqual({ role: 'owner', hasWorkspace: true });
    expect(await w.directory.mintStanding(ada.id, globex)).toEqual({ role: 'viewer', hasWorkspace: false });
    expect(await w.directory.mintStanding(bob.id, globex)).toBeNull();
    expect(await w.directory.mintStanding(ada.id, randomUUID())).toBeNull();
  });

  it('memberContexts: one context per pair that is a membership, keyed by memberKey, with the org’s plan and member count', async () => {
    const contexts = await w.directory.memberContexts([
      { userId: ada.id, orgId: acme },
      { userId: bob.id, orgId: globex },
      { userId: ada.id, orgId: globex },
    ]);
    expect([...contexts.keys()].sort()).toEqual([memberKey(ada.id, acme), memberKey(ada.id, globex)].sort());
    expect(contexts.get(memberKey(ada.id, acme))).toEqual({
      userId: ada.id,
      orgId: acme,
      email: ada.email,
      role: 'owner',
      plan: 'pro',
      memberCount: 3,
    });
    expect(contexts.get(memberKey(ada.id, globex))).toEqual({
      userId: ada.id,
      orgId: globex,
      email: ada.email,
      role: 'viewer',
      plan: 'free',
      memberCount: 1,
    });
    expect((await w.directory.memberContexts([])).size).toBe(0);
  });

  it('userOrgs: the user’s orgs oldest membership first, restricted to one org when given, at most limit', async () => {
    expect((await w.directory.userOrgs(ada.id, null, 5)).map((c) => c.orgId)).toEqual([acme, globex]);
    expect((await w.directory.userOrgs(ada.id, null, 1)).map((c) => c.orgId)).toEqual([acme]);
    expect(await w.directory.userOrgs(ada.id, globex, 5)).toEqual([
      { userId: ada.id, orgId: globex, email: ada.email, role: 'viewer', plan: 'free', memberCount: 1 },
    ]);
    expect(await w.directory.userOrgs(bob.id, globex, 5)).toEqual([]);
    expect(await w.directory.userOrgs(randomUUID(), null, 5)).toEqual([]);
  });

  it('orgPlan: the plan, or null for an unknown org', async () => {
    expect(await w.directory.orgPlan(acme)).toBe('pro');
    expect(await w.directory.orgPlan(globex)).toBe('free');
    expect(await w.directory.orgPlan(randomUUID())).toBeNull();
  });

  it('listUserOrgs: newest membership first with names, limit + 1 rows, strictly after the cursor', async () => {
    const all = await w.directory.listUserOrgs(ada.id, { after: null, limit: 5 });
    expect(all).toEqual([
      { id: globex, name: 'Globex', plan: 'free', role: 'viewer', createdAt: at(3) },
      { id: acme, name: 'Acme', plan: 'pro', role: 'owner', createdAt: at(1) },
    ]);
    expect(await w.directory.listUserOrgs(ada.id, { after: null, limit: 0 })).toEqual([all[0]]);
    expect(
      await w.directory.listUserOrgs(ada.id, { after: { createdAt: all[0].createdAt, id: all[0].id }, limit: 5 }),
    ).toEqual([all[1]]);
    expect(
      await w.directory.listUserOrgs(ada.id, { after: { createdAt: all[1].createdAt, id: all[1].id }, limit: 5 }),
    ).toEqual([]);
  });

  it('listMembers: newest first, ties by user id descending, paged by (joined, id) without skipping or repeating', async () => {
    const all = await w.directory.listMembers(acme, { after: null, limit: 5 });
    const [tieFirst, tieSecond] = [bob, cy].sort((a, b) => b.id.localeCompare(a.id));
    expect(all.map((m) => m.id)).toEqual([tieFirst.id, tieSecond.id, ada.id]);
    expect(all[2]).toEqual({ id: ada.id, email: ada.email, role: 'owner', createdAt: at(1) });

    const walk: string[] = [];
    let after: { createdAt: Date; id: string } | null = null;
    for (let i = 0; i < 5; i++) {
      const page = await w.directory.listMembers(acme, { after, limit: 1 });
      if (page.length === 0) break;
      expect(page.length).toBeLessThanOrEqual(2);
      walk.push(page[0].id);
      after = { createdAt: page[0].createdAt, id: page[0].id };
    }
    expect(walk).toEqual(all.map((m) => m.id));
    expect(await w.directory.listMembers(randomUUID(), { after: null, limit: 5 })).toEqual([]);
  });
});
