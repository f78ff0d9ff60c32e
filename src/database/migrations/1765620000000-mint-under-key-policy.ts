import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * A mint and a `PUT …/key-policy` of the same org are ordered by one lock, so a mint judged
 * before a new `max_lifetime_days` commits cannot keep a longer life (or none) after it:
 * - every insert into api_keys takes the org's policy lock shared (a transaction-level advisory
 *   lock on `hashtextextended('kui.key_policy:' || org_id, 0)`), held until the mint commits;
 * - the policy's lifetime cap (src/api-keys/api-key-policy.sql.ts) takes it exclusively before
 *   its UPDATE, so it waits for the mints in flight and then caps them like every other key;
 * - a mint that had to wait for a policy's commit reads that policy once it has the lock (a
 *   PL/pgSQL statement takes a fresh snapshot) and its expiry is capped at its creation plus
 *   `max_lifetime_days`, as the policy would have capped it had it committed a moment earlier.
 * Mints of one org share the lock, so they never wait for each other.
 */
export class MintUnderKeyPolicy1765620000000 implements MigrationInterface {
  name = 'MintUnderKeyPolicy1765620000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`
      CREATE FUNCTION kui_mint_under_key_policy() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        max_days integer;
      BEGIN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('kui.key_policy:' || NEW.org_id::text, 0));
        SELECT max_lifetime_days INTO max_days FROM org_key_policies WHERE org_id = NEW.org_id;
        IF max_days IS NOT NULL
           AND (NEW.expires_at IS NULL OR NEW.expires_at > NEW.created_at + make_interval(days => max_days)) THEN
          NEW.expires_at := NEW.created_at + make_interval(days => max_days);
        END IF;
        RETURN NEW;
      END $$`);
    await q.query(`
      CREATE TRIGGER api_keys_mint_under_key_policy BEFORE INSERT ON api_keys FOR EACH ROW
        EXECUTE FUNCTION kui_mint_under_key_policy()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP TRIGGER api_keys_mint_under_key_policy ON api_keys`);
    await q.query(`DROP FUNCTION kui_mint_under_key_policy()`);
  }
}
