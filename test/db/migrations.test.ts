import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runMigrationsLocked } from '../../src/database/migrate.js';
import { ENTITIES, MIGRATIONS } from '../../src/database/schema.js';
import { databaseUrl } from '../support/database.js';

describe('migrations on an empty PostgreSQL database', () => {
  const name = `${inject('dbPrefix')}_empty_${randomBytes(3).toString('hex')}`;
  const admin = () => new pg.Client({ connectionString: inject('dbAdminUrl') });
  const source = () =>
    new DataSource({ type: 'postgres', url: databaseUrl(name), entities: ENTITIES, migrations: MIGRATIONS, installExtensions: false, poolSize: 2 });

  beforeAll(async () => {
    const c = admin();
    await c.connect();
    await c.query(`CREATE DATABASE ${name}`);
    await c.end();
  });
  afterAll(async () => {
    const c = admin();
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });

  it('apply once when several instances start together, the others waiting on the advisory lock', async () => {
    const instances = [source(), source(), source()];
    await Promise.all(instances.map((d) => d.initialize()));
    const applied = await Promise.all(instances.map((d) => runMigrationsLocked(d)));
    expect(applied.flat()).toEqual(MIGRATIONS.map((m) => new m().name));

    const [ds] = instances;
    const tables: Array<{ tablename: string }> = await ds.query(
      `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`,
    );
    expect(tables.map((t) => t.tablename)).toEqual(
      ['api_keys', 'audit_events', 'event_marks', 'event_outbox', 'memberships', 'migrations', 'orgs', 'usage_attribution', 'usage_counters', 'users', 'webhook_deliveries', 'webhook_endpoints', 'workspaces'],
    );
    // The entity metadata matches the schema the migrations built: nothing left to synchronise.
    const pending = await ds.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((q) => q.query)).toEqual([]);
    await Promise.all(instances.map((d) => d.destroy()));
  });

  it('index every hot lookup', async () => {
    const ds = await source().initialize();
    const rows: Array<{ indexdef: string }> = await ds.query(`SELECT indexdef FROM pg_indexes WHERE schemaname = 'public'`);
    const defs = rows.map((r) => r.indexdef).join('\n');
    expect(defs).toMatch(/UNIQUE INDEX api_keys_lookup_key ON public\.api_keys USING btree \(lookup\)/);
    expect(defs).toMatch(/api_keys_user_created_idx ON public\.api_keys USING btree \(user_id, created_at DESC, id DESC\)/);
    expect(defs).toMatch(/memberships_user_id_idx ON public\.memberships USING btree \(user_id\)/);
    expect(defs).toMatch(/memberships_pkey ON public\.memberships USING btree \(org_id, user_id\)/);
    expect(defs).toMatch(/usage_counters_pkey ON public\.usage_counters USING btree \(org_id, day\)/);
    await ds.destroy();
  });

  it('can all be reverted', async () => {
    const ds = await source().initialize();
    for (let i = 0; i < MIGRATIONS.length; i++) await ds.undoLastMigration();
    const tables: Array<{ tablename: string }> = await ds.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public'`);
    expect(tables.map((t) => t.tablename)).toEqual(['migrations']);
    await ds.destroy();
  });
});
