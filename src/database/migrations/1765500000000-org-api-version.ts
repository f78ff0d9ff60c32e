import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * Each org is pinned to a dated API version (src/versioning/). Existing orgs, and orgs created
 * without naming one, get the contract's version, 2026-11-01, so no answer changes under them.
 * The check keeps the column a date-shaped string; which dates exist is the service's table.
 */
export class OrgApiVersion1765500000000 implements MigrationInterface {
  name = 'OrgApiVersion1765500000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`ALTER TABLE orgs ADD COLUMN api_version text NOT NULL DEFAULT '2026-11-01'
      CONSTRAINT orgs_api_version_check CHECK (api_version ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`ALTER TABLE orgs DROP COLUMN api_version`);
  }
}
