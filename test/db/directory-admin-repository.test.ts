import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DirectoryAdminRepository } from '../../src/directory/directory-admin.repository.js';
import { openRepositoryDatabase, type RepositoryDatabase } from '../support/factories.js';

/** Every statement of DirectoryAdminRepository (the operator CLI's writes) on real PostgreSQL, without the app. */
describe('DirectoryAdminRepository on real PostgreSQL', () => {
  let r: RepositoryDatabase;
  let repo: DirectoryAdminRepository;

  beforeAll(async () => {
    r = await openRepositoryDatabase();
    repo = new DirectoryAdminRepository(r.source);
  });
  afterAll(async () => r?.close());

  it('createOrg / findOrg / setPlan: creates, finds, and changes the plan returning the previous one; null for an unknown org', async () => {
    const org = await repo.createOrg('Acme', 'free');
    expect(org).toEqual({ id: expect.any(String), name: 'Acme', plan: 'free' });
    expect(await repo.findOrg(org!.id)).toEqual(org);
    expect(await repo.setPlan(org!.id, 'pro')).toEqual({ ...org, plan: 'pro', previous_plan: 'free' });
    expect(await repo.setPlan(org!.id, 'pro')).toEqual({ ...org, plan: 'pro', previous_plan: 'pro' });
    expect(await repo.findOrg(org!.id)).toEqual({ ...org, plan: 'pro' });
    expect(await repo.setPlan(randomUUID(), 'pro')).toBeNull();
    expect(await repo.findOrg(randomUUID())).toBeNull();
  });

  it('writes with the manager it is given, so the write commits or rolls back with its audit event', async () => {
    const failed = await r.source
      .transaction(async (manager) => {
        await repo.createOrg('Rolled back', 'free', manager);
        throw new Error('the audit event failed');
      })
      .catch((e: Error) => e.message);
    expect(failed).toBe('the audit event failed');
    const { rows } = await r.db.pool.query(`SELECT 1 FROM orgs WHERE name = 'Rolled back'`);
    expect(rows).toEqual([]);
  });

  it('createUser / findUser: a given or generated id; null when the e-mail is taken (in any case) or the id exists', async () => {
    const id = randomUUID();
    const email = `ada-${id}@example.com`;
    expect(await repo.createUser(email, id)).toEqual({ id, email });
    expect(await repo.createUser(email.toUpperCase(), null)).toBeNull();
    expect(await repo.createUser(`other-${id}@example.com`, id)).toBeNull();
    const generated = await repo.createUser(`bob-${id}@example.com`, null);
    expect(generated).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), email: `bob-${id}@example.com` });
    expect(await repo.findUser(id)).toEqual({ id, email });
    expect(await repo.findUser(randomUUID())).toBeNull();
  });

  it('upsertMember / isMember / removeMember: adds with no previous role, changes returning the previous one, removes once', async () => {
    const org = (await repo.createOrg('Members', 'free'))!;
    const user = (await repo.createUser(`m-${randomUUID()}@example.com`, null))!;
    expect(await repo.isMember(org.id, user.id)).toBeNull();
    expect(await repo.upsertMember(org.id, user.id, 'viewer')).toEqual({
      org_id: org.id,
      user_id: user.id,
      role: 'viewer',
      previous_role: null,
    });
    expect(await repo.upsertMember(org.id, user.id, 'admin')).toEqual({
      org_id: org.id,
      user_id: user.id,
      role: 'admin',
      previous_role: 'viewer',
    });
    expect(await repo.isMember(org.id, user.id)).toEqual({ org_id: org.id, user_id: user.id, role: 'admin' });
    expect(await repo.removeMember(org.id, user.id)).toEqual({ org_id: org.id, user_id: user.id, role: 'admin' });
    expect(await repo.removeMember(org.id, user.id)).toBeNull();
    expect(await repo.isMember(org.id, user.id)).toBeNull();
  });

  it('createWorkspace: idempotent, the second call returns the first workspace with created false', async () => {
    const org = (await repo.createOrg('Workspaces', 'free'))!;
    const user = (await repo.createUser(`w-${randomUUID()}@example.com`, null))!;
    await repo.upsertMember(org.id, user.id, 'member');
    const first = await repo.createWorkspace(org.id, user.id);
    expect(first).toEqual({ id: expect.any(String), org_id: org.id, user_id: user.id, created: true });
    expect(await repo.createWorkspace(org.id, user.id)).toEqual({ ...first, created: false });
    const { rows } = await r.db.pool.query(`SELECT count(*)::int AS n FROM workspaces WHERE org_id = $1`, [org.id]);
    expect(rows[0].n).toBe(1);
  });
});
