import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * Webhook signing secrets can be rotated with an overlap: the secret rotated out stays sealed in
 * `previous_secret_box` and signs beside the new one until `previous_secret_expires_at`, then is
 * cleared. Both or neither are set.
 */
export class WebhookSecretRotation1764900500000 implements MigrationInterface {
  name = 'WebhookSecretRotation1764900500000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`
      ALTER TABLE webhook_endpoints
        ADD COLUMN previous_secret_box bytea,
        ADD COLUMN previous_secret_expires_at timestamptz,
        ADD CONSTRAINT webhook_endpoints_previous_secret_check
          CHECK ((previous_secret_box IS NULL) = (previous_secret_expires_at IS NULL))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`
      ALTER TABLE webhook_endpoints
        DROP CONSTRAINT webhook_endpoints_previous_secret_check,
        DROP COLUMN previous_secret_expires_at,
        DROP COLUMN previous_secret_box`);
  }
}
