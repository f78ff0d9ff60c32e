import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * Failed authentications per client address and window, shared by every instance. The layout is
 * rate-limiter-flexible's RateLimiterPostgres table (it would create it itself; a migration keeps
 * schema changes in one place and lets the service run without CREATE rights).
 */
export class AuthFailureCounts1764100000000 implements MigrationInterface {
  name = 'AuthFailureCounts1764100000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`
      CREATE TABLE auth_failure_counts (
        key varchar(255) PRIMARY KEY,
        points integer NOT NULL DEFAULT 0,
        expire bigint
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP TABLE auth_failure_counts`);
  }
}
