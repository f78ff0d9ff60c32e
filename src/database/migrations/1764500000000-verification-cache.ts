import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * The verification cache's coherence protocol (see src/coherence/):
 * - `verification_invalidations`: one row, the sequence of committed invalidations. Every change
 *   takes its row lock until commit, so sequence numbers are handed out in commit order and an
 *   instance that has applied number N has applied every number below it.
 * - triggers on the tables a cached answer is built from NOTIFY `kui_verification` in the
 *   changing transaction (delivered at commit), whoever makes the change: the service, the CLI,
 *   another branch's rotation, a host's own SQL.
 * - `cache_leases`: one row per instance allowed to answer from its cache, and the highest
 *   invalidation it has applied (`acked_seq`).
 */
export class VerificationCache1764500000000 implements MigrationInterface {
  name = 'VerificationCache1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`
      CREATE TABLE verification_invalidations (
        id boolean PRIMARY KEY DEFAULT true CHECK (id),
        seq bigint NOT NULL
      )`);
    await q.query(`INSERT INTO verification_invalidations (id, seq) VALUES (true, 0)`);
    await q.query(`
      CREATE TABLE cache_leases (
        instance_id text PRIMARY KEY,
        expires_at timestamptz NOT NULL,
        acked_seq bigint NOT NULL
      )`);
    // One function for every table: the ids of what changed, as JSON, under the next sequence number.
    await q.query(`
      CREATE FUNCTION kui_notify_verification() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        r jsonb;
        n bigint;
      BEGIN
        IF TG_OP = 'DELETE' THEN r := to_jsonb(OLD); ELSE r := to_jsonb(NEW); END IF;
        UPDATE verification_invalidations SET seq = seq + 1 WHERE id RETURNING seq INTO n;
        PERFORM pg_notify('kui_verification', json_build_object(
          's', n,
          'k', CASE WHEN TG_TABLE_NAME = 'api_keys' THEN r->>'id' END,
          'u', CASE WHEN TG_TABLE_NAME = 'users' THEN r->>'id' WHEN TG_TABLE_NAME = 'memberships' THEN r->>'user_id' END,
          'o', CASE WHEN TG_TABLE_NAME = 'orgs' THEN r->>'id' WHEN TG_TABLE_NAME = 'memberships' THEN r->>'org_id' END
        )::text);
        RETURN NULL;
      END $$`);
    // last_used_at is written behind every verification: its changes must not invalidate anything.
    await q.query(`
      CREATE TRIGGER api_keys_invalidate_update AFTER UPDATE ON api_keys FOR EACH ROW
        WHEN ((to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at'))
        EXECUTE FUNCTION kui_notify_verification()`);
    await q.query(
      `CREATE TRIGGER api_keys_invalidate_delete AFTER DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION kui_notify_verification()`,
    );
    // A membership change moves the org's member count too, so it invalidates the whole org.
    await q.query(`
      CREATE TRIGGER memberships_invalidate AFTER INSERT OR UPDATE OR DELETE ON memberships FOR EACH ROW
        EXECUTE FUNCTION kui_notify_verification()`);
    await q.query(
      `CREATE TRIGGER users_invalidate AFTER UPDATE OR DELETE ON users FOR EACH ROW EXECUTE FUNCTION kui_notify_verification()`,
    );
    await q.query(
      `CREATE TRIGGER orgs_invalidate AFTER UPDATE OR DELETE ON orgs FOR EACH ROW EXECUTE FUNCTION kui_notify_verification()`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP TRIGGER orgs_invalidate ON orgs`);
    await q.query(`DROP TRIGGER users_invalidate ON users`);
    await q.query(`DROP TRIGGER memberships_invalidate ON memberships`);
    await q.query(`DROP TRIGGER api_keys_invalidate_delete ON api_keys`);
    await q.query(`DROP TRIGGER api_keys_invalidate_update ON api_keys`);
    await q.query(`DROP FUNCTION kui_notify_verification()`);
    await q.query(`DROP TABLE cache_leases`);
    await q.query(`DROP TABLE verification_invalidations`);
  }
}
