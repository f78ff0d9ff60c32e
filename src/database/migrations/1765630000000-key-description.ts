import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/** A key's `description`: free text (at most 500 characters, the API's rule), set at mint or by PATCH; null: none. */
export class KeyDescription1765630000000 implements MigrationInterface {
  name = 'KeyDescription1765630000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`ALTER TABLE api_keys ADD COLUMN description text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`ALTER TABLE api_keys DROP COLUMN description`);
  }
}
