import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * The active-key cap (MAX_ACTIVE_KEYS_PER_USER_ORG) in O(1) per mint. `api_key_counts` holds,
 * per (user, org), how many of the user's keys in the org are not revoked. A trigger on
 * `api_keys` keeps it right whoever changes the keys (mint, revoke, admin revoke, leaked-key
 * revoke, a host's own SQL, a bulk insert); a mint locks the pair's row and checks the count in
 * the same statement that inserts the key (src/api-keys/api-key.repository.ts).
 *
 * Expiry is not counted (no row changes when a key expires), so the count can only be too high:
 * a mint it refuses falls back to the exact count of active keys (under the same row lock) and
 * writes the true number back. The trigger is created before the backfill: it locks api_keys
 * against writers until this migration commits, so no key is missed or counted twice.
 */
export class ApiKeyCounts1764800000000 implements MigrationInterface {
  name = 'ApiKeyCounts1764800000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`
      CREATE TABLE api_key_counts (
        user_id uuid NOT NULL,
        org_id uuid NOT NULL,
        unrevoked integer NOT NULL DEFAULT 0,
        PRIMARY KEY (user_id, org_id)
      )`);
    await q.query(`
      CREATE FUNCTION kui_count_api_keys() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'TRUNCATE' THEN
          DELETE FROM api_key_counts;
          RETURN NULL;
        END IF;
        IF TG_OP <> 'INSERT' THEN
          IF OLD.revoked_at IS NULL THEN
            UPDATE api_key_counts SET unrevoked = unrevoked - 1 WHERE user_id = OLD.user_id AND org_id = OLD.org_id;
          END IF;
        END IF;
        IF TG_OP <> 'DELETE' THEN
          IF NEW.revoked_at IS NULL THEN
            INSERT INTO api_key_counts AS c (user_id, org_id, unrevoked) VALUES (NEW.user_id, NEW.org_id, 1)
            ON CONFLICT (user_id, org_id) DO UPDATE SET unrevoked = c.unrevoked + 1;
          END IF;
        END IF;
        RETURN NULL;
      END $$`);
    // WHEN clauses keep every other write (last_used_at behind each verification, rotation) free of the call.
    await q.query(`
      CREATE TRIGGER api_keys_count_insert AFTER INSERT ON api_keys FOR EACH ROW
        WHEN (NEW.revoked_at IS NULL) EXECUTE FUNCTION kui_count_api_keys()`);
    await q.query(`
      CREATE TRIGGER api_keys_count_update AFTER UPDATE OF revoked_at, user_id, org_id ON api_keys FOR EACH ROW
        WHEN ((OLD.revoked_at IS NULL) <> (NEW.revoked_at IS NULL) OR OLD.user_id <> NEW.user_id OR OLD.org_id <> NEW.org_id)
        EXECUTE FUNCTION kui_count_api_keys()`);
    await q.query(`
      CREATE TRIGGER api_keys_count_delete AFTER DELETE ON api_keys FOR EACH ROW
        WHEN (OLD.revoked_at IS NULL) EXECUTE FUNCTION kui_count_api_keys()`);
    await q.query(
      `CREATE TRIGGER api_keys_count_truncate AFTER TRUNCATE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION kui_count_api_keys()`,
    );
    await q.query(`
      INSERT INTO api_key_counts (user_id, org_id, unrevoked)
      SELECT user_id, org_id, count(*)::int FROM api_keys WHERE revoked_at IS NULL GROUP BY user_id, org_id`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP TRIGGER api_keys_count_truncate ON api_keys`);
    await q.query(`DROP TRIGGER api_keys_count_delete ON api_keys`);
    await q.query(`DROP TRIGGER api_keys_count_update ON api_keys`);
    await q.query(`DROP TRIGGER api_keys_count_insert ON api_keys`);
    await q.query(`DROP FUNCTION kui_count_api_keys()`);
    await q.query(`DROP TABLE api_key_counts`);
  }
}
