import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * The active-key cap (MAX_ACTIVE_KEYS_PER_USER_ORG) counts a user's unrevoked, unexpired keys in
 * an org on every mint. Through the (user_id, created_at) index that count fetched every key the
 * user ever minted from the heap; this partial index holds exactly the unrevoked ones with their
 * expiry, so the count is an index-only scan bounded by the cap.
 */
export class ActiveKeysIndex1764700000000 implements MigrationInterface {
  name = 'ActiveKeysIndex1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(
      `CREATE INDEX api_keys_active_owner_idx ON api_keys (user_id, org_id, expires_at) WHERE revoked_at IS NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP INDEX api_keys_active_owner_idx`);
  }
}
