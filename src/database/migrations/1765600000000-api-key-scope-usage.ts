import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * Which scopes each key's requests needed, per UTC day: one row per key, scope and day, written
 * behind the responses in batches (auth/scope-usage-recorder.ts), read by
 * `GET /api-keys/{keyID}/scope-usage`. Rows go with their key; days past the 90 that can be
 * asked for are pruned.
 */
export class ApiKeyScopeUsage1765600000000 implements MigrationInterface {
  name = 'ApiKeyScopeUsage1765600000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`
      CREATE TABLE api_key_scope_usage (
        key_id uuid NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
        scope text NOT NULL,
        day date NOT NULL,
        requests bigint NOT NULL CHECK (requests > 0),
        last_used_at timestamptz NOT NULL,
        PRIMARY KEY (key_id, scope, day)
      )`);
    await q.query(`CREATE INDEX api_key_scope_usage_day_idx ON api_key_scope_usage (day)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP TABLE api_key_scope_usage`);
  }
}
