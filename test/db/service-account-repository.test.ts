import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceAccountRepository, serviceAccountEmail } from '../../src/service-keys/service-account.repository.js';
import { openRepositoryDatabase, type RepositoryDatabase } from '../support/factories.js';

/** Every statement of ServiceAccountRepository on real PostgreSQL, without the app (two connections' pools for the race). */
describe('ServiceAccountRepository on real PostgreSQL', () => {
  let r: RepositoryDatabase;
  let repos: ServiceAccountRepository[];

  beforeAll(async () => {
    r = await openRepositoryDatabase(2);
    repos = r.sources.map((s) => new ServiceAccountRepository(s));
  });
  afterAll(async () => r?.close());

  const accounts = async (orgId: string) =>
    (
      await r.db.pool.query(
        `SELECT u.id, u.email, u.kind, m.role FROM users u LEFT JOIN memberships m ON m.user_id = u.id AND m.org_id = $1 WHERE u.email = $2`,
        [orgId, serviceAccountEmail(orgId)],
      )
    ).rows;

  it('ensure: one account per org, with an owner membership, even when instances create it at once; find reads it', async () => {
    const orgId = await r.seed.org();
    expect(await repos[0].find(orgId)).toBeNull();
    const ids = await Promise.all([...repos, ...repos].map((repo) => repo.ensure(orgId)));
    expect(new Set(ids).size).toBe(1);
    expect(await accounts(orgId)).toEqual([
      { id: ids[0], email: `svc-${orgId}@service-accounts.invalid`, kind: 'service', role: 'owner' },
    ]);
    expect(await repos[1].find(orgId)).toBe(ids[0]);
  });

  it('ensure restores a membership removed or changed by hand', async () => {
    const orgId = await r.seed.org();
    const id = await repos[0].ensure(orgId);
    await r.db.pool.query(`UPDATE memberships SET role = 'viewer' WHERE user_id = $1`, [id]);
    expect(await repos[0].ensure(orgId)).toBe(id);
    expect((await accounts(orgId))[0].role).toBe('owner');
    await r.db.pool.query(`DELETE FROM memberships WHERE user_id = $1`, [id]);
    expect(await repos[0].ensure(orgId)).toBe(id);
    expect((await accounts(orgId))[0].role).toBe('owner');
  });

  it('ensure answers null, and find ignores, a person holding the reserved address; neither makes them a member', async () => {
    const orgId = await r.seed.org();
    await r.seed.user(serviceAccountEmail(orgId).toUpperCase());
    expect(await repos[0].ensure(orgId)).toBeNull();
    expect(await repos[0].find(orgId)).toBeNull();
    expect(await accounts(orgId)).toEqual([expect.objectContaining({ kind: 'person', role: null })]);
  });
});
