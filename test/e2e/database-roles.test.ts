import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditService } from '../../src/audit/audit.service.js';
import { createApp } from '../../src/bootstrap.js';
import { buildAppConfig, loadEnvironment } from '../../src/config/app-config.js';
import { openDatabase } from '../../src/database/open-database.js';
import { adminQuery, createLoginRole, useEmptyDatabase } from '../support/database.js';
import { ApiClient } from '../support/http.js';
import { Seeder, TEST_API_KEY_SECRET, TEST_SESSION_SECRET } from '../support/seed.js';
import { testConfig } from '../support/test-app.js';

/**
 * A real server set up as the operations docs say: an owner role that runs the migrations
 * (DATABASE_MIGRATION_URL; here the test server's superuser) and a login role of the service's
 * own (DATABASE_URL) with CONNECT and CREATE on the database and nothing else to start with.
 */
describe('the service on PostgreSQL with an owner role and a service role', () => {
  const { name, url: ownerUrl } = useEmptyDatabase('roles');
  let login: Awaited<ReturnType<typeof createLoginRole>>;
  let app: NestFastifyApplication;
  let api: ApiClient;
  let owner: pg.Pool;

  beforeAll(async () => {
    login = await createLoginRole('app');
    await adminQuery(`GRANT CONNECT, CREATE ON DATABASE ${name} TO ${login.role}`);
    const config = testConfig(login.urlFor(ownerUrl), { DATABASE_MIGRATION_URL: ownerUrl, DB_MIGRATE: 'true' });
    app = await createApp(config, { logger: false });
    await app.listen(0, '127.0.0.1');
    api = new ApiClient(`http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`);
    owner = new pg.Pool({ connectionString: ownerUrl, max: 2 });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await owner?.end();
    await login?.drop(name);
  });

  it('migrates as the owner and serves as the service role: keys, their audit trail and retention all work', async () => {
    const { rows: tables } = await owner.query(`SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public'`);
    expect(tables).toEqual([{ tableowner: new URL(ownerUrl).username || 'postgres' }]);
    const { rows: sessions } = await owner.query(
      `SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = $1 AND application_name = 'keys-usage-identity'`,
      [name],
    );
    expect(sessions).toEqual([{ usename: login.role }]);

    const seed = new Seeder(owner);
    const w = await seed.world('owner');
    const minted = await api.post('/api-keys', w.session, { org_id: w.orgId, name: 'ci', scopes: ['decisions:read'] });
    expect(minted.status).toBe(201);
    expect((await api.get('/me', minted.body.key)).status).toBe(200);
    expect((await api.delete(`/api-keys/${minted.body.id}`, w.session)).status).toBe(204);
    expect((await api.get('/me', minted.body.key)).status).toBe(401);
    const events = await api.get(`/orgs/${w.orgId}/audit-events`, w.session);
    expect(events.body.events.map((e: { action: string }) => e.action)).toEqual(['api_key.revoked', 'api_key.minted']);
    expect(await app.get(AuditService).prune()).toBe(0);
  });

  it('warns in production when DATABASE_URL itself has the owner’s rights, and not when the roles are apart', async () => {
    const production = (env: Record<string, string>) =>
      buildAppConfig(
        loadEnvironment({
          NODE_ENV: 'production',
          SESSION_JWT_SECRET: TEST_SESSION_SECRET,
          API_KEY_SECRET: TEST_API_KEY_SECRET,
          ...env,
        }),
      );
    for (const [env, warned] of [
      [{ DATABASE_URL: ownerUrl }, true],
      [{ DATABASE_URL: login.urlFor(ownerUrl), DATABASE_MIGRATION_URL: ownerUrl }, false],
    ] as const) {
      const warnings: string[] = [];
      const ds = await openDatabase(production(env), 'server', true, {}, (m) => warnings.push(m));
      await ds.destroy();
      expect(warnings.length > 0, JSON.stringify(env)).toBe(warned);
      if (warned) expect(warnings[0]).toMatch(/owns the schema.*DATABASE_MIGRATION_URL/);
    }
    // The operator's CLI may be the owner: its every command would otherwise print the server's warning.
    const warnings: string[] = [];
    const cli = await openDatabase(production({ DATABASE_URL: ownerUrl }), 'cli', false, {}, (m) => warnings.push(m));
    await cli.destroy();
    expect(warnings).toEqual([]);
  });
});
