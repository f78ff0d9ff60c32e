import pg from 'pg';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runMigrationsLocked } from '../../src/database/migrate.js';
import { ENTITIES, MIGRATIONS } from '../../src/core/schema.js';
import { databaseUrl, useEmptyDatabase } from '../support/database.js';

describe('migrations on an empty PostgreSQL database', () => {
  const { name } = useEmptyDatabase('empty');
  const admin = () => new pg.Client({ connectionString: inject('dbAdminUrl') });
  const source = () =>
    new DataSource({
      type: 'postgres',
      url: databaseUrl(name),
      entities: ENTITIES,
      migrations: MIGRATIONS,
      installExtensions: false,
      poolSize: 2,
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
    expect(tables.map((t) => t.tablename)).toEqual([
      'api_key_counts',
      'api_key_scope_usage',
      'api_key_stale_warnings',
      'api_key_verification_days',
      'api_key_verification_hours',
      'api_keys',
      'audit_events',
      'auth_failure_counts',
      'cache_leases',
      'event_marks',
      'event_outbox',
      'key_rate_windows',
      'memberships',
      'migrations',
      'org_key_policies',
      'orgs',
      'usage_attribution',
      'usage_counters',
      'usage_leases',
      'usage_meter_attribution',
      'usage_meter_counters',
      'users',
      'verification_invalidations',
      'webhook_deliveries',
      'webhook_endpoints',
      'workspaces',
    ]);
    // The entity metadata matches the schema the migrations built: nothing left to synchronise.
    const pending = await ds.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((q) => q.query)).toEqual([]);
    await Promise.all(instances.map((d) => d.destroy()));
  });

  it('index every hot lookup', async () => {
    const ds = await source().initialize();
    const rows: Array<{ indexdef: string }> = await ds.query(
      `SELECT indexdef FROM pg_indexes WHERE schemaname = 'public'`,
    );
    const defs = rows.map((r) => r.indexdef).join('\n');
    expect(defs).toMatch(/UNIQUE INDEX api_keys_lookup_key ON public\.api_keys USING btree \(lookup\)/);
    expect(defs).toMatch(
      /api_keys_user_created_idx ON public\.api_keys USING btree \(user_id, created_at DESC, id DESC\)/,
    );
    expect(defs).toMatch(/memberships_user_id_idx ON public\.memberships USING btree \(user_id\)/);
    expect(defs).toMatch(/memberships_pkey ON public\.memberships USING btree \(org_id, user_id\)/);
    expect(defs).toMatch(/usage_counters_pkey ON public\.usage_counters USING btree \(org_id, day\)/);
    await ds.destroy();
  });

  it('build the schema that synchronize builds from the entities: columns, types, nullability, unique and plain indexes', async () => {
    // A second empty database, built by TypeORM's synchronize from ENTITIES alone.
    const synced = `${name}_sync`;
    const c = admin();
    await c.connect();
    await c.query(`CREATE DATABASE ${synced}`);
    await c.end();
    const migratedDs = await source().initialize();
    const syncedDs = await new DataSource({
      type: 'postgres',
      url: databaseUrl(synced),
      entities: ENTITIES,
      uuidExtension: 'pgcrypto',
      poolSize: 2,
      synchronize: true,
    }).initialize();
    try {
      const [fromMigrations, fromSynchronize] = await Promise.all([schemaShape(migratedDs), schemaShape(syncedDs)]);
      expect(fromMigrations.indexes).toContain('users unique (email)');
      expect(fromSynchronize).toEqual(fromMigrations);
    } finally {
      await Promise.all([migratedDs.destroy(), syncedDs.destroy()]);
      const d = admin();
      await d.connect();
      await d.query(`DROP DATABASE IF EXISTS ${synced} WITH (FORCE)`);
      await d.end();
    }
  });

  it('can all be reverted', async () => {
    const ds = await source().initialize();
    for (let i = 0; i < MIGRATIONS.length; i++) await ds.undoLastMigration();
    const tables: Array<{ tablename: string }> = await ds.query(
      `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`,
    );
    expect(tables.map((t) => t.tablename)).toEqual(['migrations']);
    await ds.destroy();
  });
});

/**
 * What both ways of building the schema must agree on. Constraint and primary-key names are left
 * out (synchronize names them by hash); TypeORM's own `migrations` table is not ours.
 */
/**
 * The tables the entities map, as the catalogue sees them. Tables that only raw SQL uses (the
 * cache's leases, the throttle's counts, the event outbox...) have no entity: synchronize cannot
 * build them, so they are left out of the comparison.
 */
async function schemaShape(ds: DataSource): Promise<{ columns: string[]; indexes: string[] }> {
  const tables = ENTITIES.map((e) => ds.getMetadata(e).tableName);
  const columns: Array<{ c: string }> = await ds.query(
    `
    SELECT table_name || '.' || column_name || ' ' || udt_name || CASE WHEN is_nullable = 'YES' THEN ' null' ELSE '' END AS c
      FROM information_schema.columns
     WHERE table_schema = 'public' AND table_name = ANY($1)
     ORDER BY 1`,
    [tables],
  );
  const indexes: Array<{ i: string }> = await ds.query(
    `
    SELECT t.relname || CASE WHEN i.indisunique THEN ' unique (' ELSE ' index (' END ||
           coalesce(pg_get_expr(i.indexprs, i.indrelid),
                    (SELECT string_agg(a.attname, ', ' ORDER BY k.n)
                       FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
                       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum)) || ')' AS i
      FROM pg_index i
      JOIN pg_class t ON t.oid = i.indrelid
      JOIN pg_namespace s ON s.oid = t.relnamespace
     WHERE s.nspname = 'public' AND t.relname = ANY($1)
     ORDER BY 1`,
    [tables],
  );
  return { columns: columns.map((r) => r.c), indexes: indexes.map((r) => r.i) };
}
