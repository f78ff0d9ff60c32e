import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * Service keys: keys an org owns, held by the org's service account.
 * - `users.kind`: `person` (everyone so far) or `service`, a service account: a user that cannot
 *   sign in and is not counted among the org's people.
 * - `api_keys.created_by`: for a service key, the owner or admin who minted it (the key's
 *   `user_id` is the service account); null for a personal key. Kept when that person leaves.
 */
export class ServiceKeys1765200000000 implements MigrationInterface {
  name = 'ServiceKeys1765200000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(
      `ALTER TABLE users ADD COLUMN kind text NOT NULL DEFAULT 'person' CONSTRAINT users_kind_check CHECK (kind IN ('person', 'service'))`,
    );
    await q.query(`ALTER TABLE api_keys ADD COLUMN created_by uuid`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`ALTER TABLE api_keys DROP COLUMN created_by`);
    await q.query(`ALTER TABLE users DROP COLUMN kind`);
  }
}
