import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * E-mail uniqueness ignoring case, in a form an entity can declare: a `citext` column with a
 * plain unique index, instead of a unique index on the expression `lower(email)` (TypeORM has no
 * expression indexes, so `synchronize` created the table without it). Same rule, same index name.
 */
export class UsersEmailCitext1764600000000 implements MigrationInterface {
  name = 'UsersEmailCitext1764600000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    // A trusted extension since PostgreSQL 13: the database owner may create it.
    await q.query(`CREATE EXTENSION IF NOT EXISTS citext`);
    await q.query(`DROP INDEX users_email_key`);
    await q.query(`ALTER TABLE users ALTER COLUMN email TYPE citext`);
    await q.query(`CREATE UNIQUE INDEX users_email_key ON users (email)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP INDEX users_email_key`);
    await q.query(`ALTER TABLE users ALTER COLUMN email TYPE text`);
    await q.query(`CREATE UNIQUE INDEX users_email_key ON users (lower(email))`);
  }
}
