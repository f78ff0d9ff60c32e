import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * Per-key controls (docs/key-controls.md):
 * - on `api_keys`: `enabled`, `rate_limits` (JSON array of windows), `credits_remaining` with
 *   `credits_refill` (JSON) and `credits_period` (the start of the refill period the balance
 *   belongs to), `allowed_cidrs`, `metadata` (JSON object). Null: not set.
 * - the change notification trigger ignores the credit balance as it ignores `last_used_at`: the
 *   balance moves with every lease of credits and no cached verification depends on it.
 *   `credits_epoch` moves with every change of the credits setting, so credits leased before it
 *   are neither spent nor given back after it.
 * - `key_rate_windows`: per key and window name, a token bucket (tokens left at `at`) from which
 *   instances lease blocks; `last_grant` is what the latest lease took.
 */
export class KeyControls1765100000000 implements MigrationInterface {
  name = 'KeyControls1765100000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`
      ALTER TABLE api_keys
        ADD COLUMN enabled boolean NOT NULL DEFAULT true,
        ADD COLUMN rate_limits jsonb,
        ADD COLUMN credits_remaining bigint CONSTRAINT api_keys_credits_remaining_check CHECK (credits_remaining >= 0),
        ADD COLUMN credits_refill jsonb,
        ADD COLUMN credits_period timestamptz,
        ADD COLUMN credits_epoch integer NOT NULL DEFAULT 0,
        ADD COLUMN allowed_cidrs text[],
        ADD COLUMN metadata jsonb`);
    await q.query(`DROP TRIGGER api_keys_invalidate_update ON api_keys`);
    await q.query(`
      CREATE TRIGGER api_keys_invalidate_update AFTER UPDATE ON api_keys FOR EACH ROW
        WHEN ((to_jsonb(OLD) - 'last_used_at' - 'credits_remaining' - 'credits_period')
              IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at' - 'credits_remaining' - 'credits_period'))
        EXECUTE FUNCTION kui_notify_verification()`);
    await q.query(`
      CREATE TABLE key_rate_windows (
        key_id uuid NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
        name text NOT NULL,
        tokens double precision NOT NULL,
        at timestamptz NOT NULL,
        last_grant integer NOT NULL,
        PRIMARY KEY (key_id, name)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP TABLE key_rate_windows`);
    await q.query(`DROP TRIGGER api_keys_invalidate_update ON api_keys`);
    await q.query(`
      CREATE TRIGGER api_keys_invalidate_update AFTER UPDATE ON api_keys FOR EACH ROW
        WHEN ((to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at'))
        EXECUTE FUNCTION kui_notify_verification()`);
    await q.query(`
      ALTER TABLE api_keys DROP COLUMN enabled, DROP COLUMN rate_limits, DROP COLUMN credits_remaining, DROP COLUMN credits_refill,
        DROP COLUMN credits_period, DROP COLUMN credits_epoch, DROP COLUMN allowed_cidrs, DROP COLUMN metadata`);
  }
}
