import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Rotation with a grace period: a rotated key keeps its row; the secret it replaced lives on in
 * `previous_*` until `previous_expires_at`, so verification looks a key up by `lookup` OR
 * `previous_lookup` in its one statement. Plus the index behind an org admin's list of keys.
 */
export class ApiKeyRotation1764200001000 implements MigrationInterface {
  name = 'ApiKeyRotation1764200001000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE api_keys
        ADD COLUMN previous_lookup text,
        ADD COLUMN previous_key_hash bytea,
        ADD COLUMN previous_expires_at timestamptz,
        ADD CONSTRAINT api_keys_previous_lookup_key UNIQUE (previous_lookup)`);
    await q.query(`CREATE INDEX api_keys_org_created_idx ON api_keys (org_id, created_at DESC, id DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX api_keys_org_created_idx`);
    await q.query(`
      ALTER TABLE api_keys
        DROP CONSTRAINT api_keys_previous_lookup_key,
        DROP COLUMN previous_expires_at,
        DROP COLUMN previous_key_hash,
        DROP COLUMN previous_lookup`);
  }
}
