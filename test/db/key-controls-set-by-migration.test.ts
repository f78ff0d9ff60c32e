import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/core/schema.js';
import { runMigrationsLocked } from '../../src/database/migrate.js';
import { databaseUrl, useEmptyDatabase } from '../support/database.js';

/** Migration 1766000000070: keys that already carry controls get who set them, from the audit log. */
describe('the controls_set_by migration', () => {
  const { name } = useEmptyDatabase('setby');
  const source = (migrations: typeof MIGRATIONS) =>
    new DataSource({ type: 'postgres', url: databaseUrl(name), migrations, installExtensions: false, poolSize: 2 });

  it('says an admin set a control a service key has, or one whose latest change someone else made, and its owner otherwise', async () => {
    const at = MIGRATIONS.findIndex((m) => m.name === 'KeyControlsSetBy1766000000070');
    expect(at).toBeGreaterThan(0);
    const before = await source(MIGRATIONS.slice(0, at)).initialize();
    await runMigrationsLocked(before);
    const [org, owner, admin] = [randomUUID(), randomUUID(), randomUUID()];
    const key = async (columns: string, values: string) => {
      const id = randomUUID();
      await before.query(
        `INSERT INTO api_keys (id, user_id, org_id, lookup, last4, key_hash, scopes${columns})
         VALUES ($1::uuid, $2, $3, 'm' || md5($1::text), 'abcd', '\\x00', ARRAY['decisions:read']${values})`,
        [id, owner, org],
      );
      return id;
    };
    const updated = (keyId: string, actor: string | null, changed: string[], minutesAgo: number) =>
      before.query(
        `INSERT INTO audit_events (created_at, org_id, action, actor_type, actor_id, target_type, target_id, details)
         VALUES (now() - $1 * interval '1 minute', $2, 'api_key.updated', $3, $4, 'api_key', $5, $6)`,
        [minutesAgo, org, actor ? 'user' : 'operator', actor, keyId, JSON.stringify({ name: 'k', changed })],
      );
    const mixed = await key(
      `, rate_limits, metadata`,
      `, '[{"name":"default","limit":5,"window_seconds":1}]', '{"a":1}'`,
    );
    await updated(mixed, admin, ['rate_limits', 'name'], 5);
    const reEnabled = await key(`, enabled`, `, false`);
    await updated(reEnabled, admin, ['enabled'], 10);
    await updated(reEnabled, owner, ['enabled'], 1);
    const byOperator = await key(`, allowed_cidrs`, `, ARRAY['10.0.0.0/8']`);
    await updated(byOperator, null, ['allowed_cidrs'], 1);
    const service = await key(`, created_by, credits_remaining`, `, '${admin}'::uuid, 5`);
    const plain = await key('', '');
    await updated(plain, admin, ['name'], 1);
    await before.destroy();

    const after = await source(MIGRATIONS.slice(0, at + 1)).initialize();
    expect(await runMigrationsLocked(after)).toEqual(['KeyControlsSetBy1766000000070']);
    const setBy = async (id: string) =>
      (
        (await after.query(`SELECT controls_set_by FROM api_keys WHERE id = $1`, [id])) as Array<{
          controls_set_by: unknown;
        }>
      )[0].controls_set_by;
    expect(await setBy(mixed)).toEqual({ rate_limits: 'admin', metadata: 'owner' });
    expect(await setBy(reEnabled)).toEqual({ enabled: 'owner' });
    expect(await setBy(byOperator)).toEqual({ allowed_cidrs: 'admin' });
    expect(await setBy(service)).toEqual({ credits: 'admin' });
    expect(await setBy(plain)).toBeNull();
    await after.undoLastMigration();
    const columns: unknown[] = await after.query(
      `SELECT 1 FROM information_schema.columns WHERE table_name = 'api_keys' AND column_name = 'controls_set_by'`,
    );
    expect(columns).toHaveLength(0);
    await after.destroy();
  });
});
