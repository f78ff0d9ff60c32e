import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../src/database/schema.js';
import { runMigrationsLocked } from '../../src/database/migrate.js';

/**
 * One run = one template database with every migration applied (proving the migrations run on
 * real PostgreSQL); each test file clones it into a database of its own. All of them carry this
 * run's prefix and are dropped at the end, so runs never collide and leave nothing behind.
 */
export const ADMIN_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export default async function setup(project: TestProject) {
  const prefix = `kui_t_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const template = `${prefix}_tpl`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${template}`);
  await admin.end();

  const ds = new DataSource({ type: 'postgres', url: withDatabase(ADMIN_URL, template), migrations: MIGRATIONS, installExtensions: false });
  await ds.initialize();
  await runMigrationsLocked(ds);
  await ds.destroy();

  project.provide('dbAdminUrl', ADMIN_URL);
  project.provide('dbTemplate', template);
  project.provide('dbPrefix', prefix);

  return async () => {
    const c = new pg.Client({ connectionString: ADMIN_URL });
    await c.connect();
    const { rows } = await c.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [`${prefix}%`]);
    for (const { datname } of rows) {
      await c.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    }
    await c.end();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    dbAdminUrl: string;
    dbTemplate: string;
    dbPrefix: string;
  }
}
