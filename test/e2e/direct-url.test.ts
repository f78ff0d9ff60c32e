import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantServiceRole } from '../../src/database/roles.js';
import { createLoginRole, createTestDatabase, type TestDatabase } from '../support/database.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { mintOk } from './api-keys.fixtures.js';

/**
 * DATABASE_DIRECT_URL: the session-mode connection beside a pooled DATABASE_URL. The verification
 * cache's LISTEN connection and its acknowledgements must go there (a transaction pooler on
 * DATABASE_URL would never deliver them); here the direct URL logs in as a role of its own, so
 * the server itself shows which URL each connection came through.
 */
describe('DATABASE_DIRECT_URL carries the LISTEN connection, DATABASE_URL everything else', () => {
  let db: TestDatabase;
  let t: TestApp;
  let login: Awaited<ReturnType<typeof createLoginRole>>;

  beforeAll(async () => {
    db = await createTestDatabase();
    login = await createLoginRole('direct');
    const owner = await new DataSource({ type: 'postgres', url: db.url, poolSize: 1 }).initialize();
    try {
      await grantServiceRole(owner, login.role);
    } finally {
      await owner.destroy();
    }
    t = await startTestApp({ db, env: { DATABASE_DIRECT_URL: login.urlFor(db.url) } });
  });
  afterAll(async () => {
    await t?.close();
    await login?.drop(db.name);
    await db?.drop();
  });

  const connections = async () =>
    (
      await db.pool.query<{ usename: string; application_name: string }>(
        `SELECT usename, application_name FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
        [db.name],
      )
    ).rows;

  it('opens the lease connection with the direct URL, and the pool with DATABASE_URL', async () => {
    await expect
      .poll(async () => (await connections()).filter((c) => c.application_name.startsWith('kui-verification-lease')))
      .toEqual([{ usename: login.role, application_name: expect.stringMatching(/^kui-verification-lease /) }]);
    const pool = (await connections()).filter((c) => c.application_name === 'keys-usage-identity');
    expect(pool.length).toBeGreaterThan(0);
    expect(pool.every((c) => c.usename !== login.role)).toBe(true);
  });

  it('a revoke still reaches the cache, acknowledged on the direct connection', async () => {
    const w = await t.seed.world('owner');
    const { id, key } = await mintOk(t, w.session, { org_id: w.orgId, name: 'direct' });
    expect((await t.api.get('/me', key)).status).toBe(200);
    expect((await t.api.get('/me', key)).status).toBe(200); // from the cache now
    expect((await t.api.delete(`/api-keys/${id}`, w.session)).status).toBe(204);
    expect((await t.api.get('/me', key)).status).toBe(401);
    const { rows } = await db.pool.query<{ acked: string; seq: string }>(
      `SELECT (SELECT max(acked_seq) FROM cache_leases)::text AS acked, (SELECT seq FROM verification_invalidations)::text AS seq`,
    );
    expect(BigInt(rows[0].acked)).toBeGreaterThanOrEqual(BigInt(rows[0].seq));
  });
});
