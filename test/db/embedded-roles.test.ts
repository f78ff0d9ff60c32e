import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildAppConfig, loadEnvironment } from '../../src/config/app-config.js';
import { openEmbedded } from '../../src/database/embedded.js';
import { openDatabase } from '../../src/database/open-database.js';

/** The embedded database's two roles, on a data directory from before they existed. */
describe('the embedded database on a data directory whose job queue schema the superuser created', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'kui-embedded-roles-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('hands the job queue schema and everything in it to the service role, then serves as that role', async () => {
    const before = await openEmbedded(dataDir);
    await before.exec(`
      CREATE SCHEMA pgboss;
      CREATE TYPE pgboss.job_state AS ENUM ('created', 'active');
      CREATE TABLE pgboss.job (id serial PRIMARY KEY, state pgboss.job_state);
      CREATE SEQUENCE pgboss.standalone;
      CREATE FUNCTION pgboss.f() RETURNS int LANGUAGE sql AS 'SELECT 1';`);
    await before.close();

    const config = buildAppConfig(loadEnvironment({ DATA_DIR: dataDir, SESSION_JWT_SECRET: 's'.repeat(40) }));
    const ds = await openDatabase(config, 'cli');
    try {
      expect(await ds.query(`SELECT current_user AS role`)).toEqual([{ role: 'kui_service' }]);
      const owners: Array<{ owner: string }> = await ds.query(`
        SELECT nspowner::regrole::text AS owner FROM pg_namespace WHERE nspname = 'pgboss'
        UNION ALL SELECT relowner::regrole::text FROM pg_class WHERE relnamespace = 'pgboss'::regnamespace AND relkind IN ('r', 'S')
        UNION ALL SELECT proowner::regrole::text FROM pg_proc WHERE pronamespace = 'pgboss'::regnamespace
        UNION ALL SELECT typowner::regrole::text FROM pg_type WHERE typnamespace = 'pgboss'::regnamespace AND typtype = 'e'`);
      expect(owners.length).toBe(6);
      expect(new Set(owners.map((o) => o.owner))).toEqual(new Set(['kui_service']));
      await ds.query(`INSERT INTO pgboss.job (state) VALUES ('created')`);
      await expect(ds.query(`DELETE FROM audit_events`)).rejects.toThrow(/permission denied/);
      // The retention function is the service's way to prune.
      expect(await ds.query(`SELECT audit_prune(now(), 100) AS n`)).toEqual([{ n: 0 }]);
    } finally {
      await ds.destroy();
    }
  }, 120_000);
});
