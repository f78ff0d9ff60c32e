import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

const TABLES = ['api_keys', 'memberships', 'users', 'orgs'];

/**
 * Change notifications that reach every cached answer a change can make stale:
 * - an UPDATE notifies what the row named before the change as well as after it (a membership
 *   moved to another user or org makes the old pair stale too: the old org's member count);
 *   once per distinct pair, each under its own sequence number;
 * - TRUNCATE of any of the tables notifies "everything" (`{"s": n, "a": true}`): every instance
 *   drops its whole cache.
 */
export class VerificationNotifyMoves1764910000000 implements MigrationInterface {
  name = 'VerificationNotifyMoves1764910000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`
      CREATE OR REPLACE FUNCTION kui_notify_verification() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        images jsonb[];
        r jsonb;
        t jsonb;
        sent jsonb[] := '{}';
        n bigint;
      BEGIN
        IF TG_LEVEL = 'STATEMENT' THEN
          UPDATE verification_invalidations SET seq = seq + 1 WHERE id RETURNING seq INTO n;
          PERFORM pg_notify('kui_verification', json_build_object('s', n, 'a', true)::text);
          RETURN NULL;
        END IF;
        IF TG_OP = 'DELETE' THEN images := ARRAY[to_jsonb(OLD)];
        ELSIF TG_OP = 'INSERT' THEN images := ARRAY[to_jsonb(NEW)];
        ELSE images := ARRAY[to_jsonb(NEW), to_jsonb(OLD)];
        END IF;
        FOREACH r IN ARRAY images LOOP
          t := jsonb_build_object(
            'k', CASE WHEN TG_TABLE_NAME = 'api_keys' THEN r->>'id' END,
            'u', CASE WHEN TG_TABLE_NAME = 'users' THEN r->>'id' WHEN TG_TABLE_NAME = 'memberships' THEN r->>'user_id' END,
            'o', CASE WHEN TG_TABLE_NAME = 'orgs' THEN r->>'id' WHEN TG_TABLE_NAME = 'memberships' THEN r->>'org_id' END);
          CONTINUE WHEN t = ANY (sent);
          sent := sent || t;
          UPDATE verification_invalidations SET seq = seq + 1 WHERE id RETURNING seq INTO n;
          PERFORM pg_notify('kui_verification', (jsonb_build_object('s', n) || t)::text);
        END LOOP;
        RETURN NULL;
      END $$`);
    for (const table of TABLES) {
      await q.query(
        `CREATE TRIGGER ${table}_invalidate_truncate AFTER TRUNCATE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION kui_notify_verification()`,
      );
    }
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    for (const table of TABLES) await q.query(`DROP TRIGGER ${table}_invalidate_truncate ON ${table}`);
    await q.query(`
      CREATE OR REPLACE FUNCTION kui_notify_verification() RETURNS trigger LANGUAGE plpgsql AS $$
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
  }
}
