import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * `key_rate_windows` becomes a sliding-window counter (docs/key-controls.md, "Across replicas"):
 * per key and window name, the fixed window now counting (`window_start`, a multiple of the
 * window's length since the epoch), what instances leased in it (`current_count`) and in the
 * window before it (`previous_count`); `last_grant` stays what the latest lease took. The token
 * buckets' rows are dropped: every window starts empty, as a new key's does.
 */
export class SlidingRateWindows1766000000030 implements MigrationInterface {
  name = 'SlidingRateWindows1766000000030';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DELETE FROM key_rate_windows`);
    await q.query(`
      ALTER TABLE key_rate_windows
        DROP COLUMN tokens, DROP COLUMN at,
        ADD COLUMN window_start timestamptz NOT NULL,
        ADD COLUMN current_count integer NOT NULL,
        ADD COLUMN previous_count integer NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DELETE FROM key_rate_windows`);
    await q.query(`
      ALTER TABLE key_rate_windows
        DROP COLUMN window_start, DROP COLUMN current_count, DROP COLUMN previous_count,
        ADD COLUMN tokens double precision NOT NULL,
        ADD COLUMN at timestamptz NOT NULL`);
  }
}
