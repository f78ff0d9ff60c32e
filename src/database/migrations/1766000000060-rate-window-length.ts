import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * `key_rate_windows.window_seconds`: the length of window the counts were taken under, so that a
 * change of a window's length (a PATCH of the key's windows) carries what the old window still
 * counts into the new one instead of starting it empty (docs/key-controls.md). Null for rows
 * counted before it: taken as the length asked.
 */
export class RateWindowLength1766000000060 implements MigrationInterface {
  name = 'RateWindowLength1766000000060';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`ALTER TABLE key_rate_windows ADD COLUMN window_seconds integer`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`ALTER TABLE key_rate_windows DROP COLUMN window_seconds`);
  }
}
