import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/** No audit event younger than this is ever deleted, whatever the caller asks (see audit_prune). */
export const AUDIT_RETENTION_FLOOR_DAYS = 30;

/**
 * The audit log stays append-only against the service's own role:
 * - the trigger no longer honours a session setting (`audit.retention`, which any session could
 *   set): it refuses every UPDATE and TRUNCATE, and a DELETE unless the deleting role has the
 *   table owner's rights *and* the event is older than the floor;
 * - retention goes through `audit_prune(cutoff, batch_size)`, a SECURITY DEFINER function (it runs
 *   as the owner) that deletes at most `batch_size` events older than `cutoff` and never one younger
 *   than AUDIT_RETENTION_FLOOR_DAYS by the database's clock. EXECUTE is revoked from PUBLIC; the
 *   service role is granted it with its other privileges (src/database/roles.ts).
 * A later change to past rows (pseudonymising an actor) takes the same shape: a narrow SECURITY
 * DEFINER function, and the trigger letting through exactly that UPDATE.
 */
export class AuditOwnerOnlyRetention1764910001000 implements MigrationInterface {
  name = 'AuditOwnerOnlyRetention1764910001000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    const [{ schema }] = (await q.query(`SELECT current_schema() AS schema`)) as Array<{ schema: string }>;
    const floor = `interval '${AUDIT_RETENTION_FLOOR_DAYS} days'`;
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' THEN
          IF pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'USAGE')
             AND OLD.created_at < now() - ${floor} THEN
            RETURN OLD;
          END IF;
        END IF;
        RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP USING ERRCODE = '42501';
      END
      $$`);
    // pg_catalog first and pg_temp last: nothing a caller creates can stand in for what it calls.
    await q.query(`
      CREATE FUNCTION audit_prune(cutoff timestamptz, batch_size integer) RETURNS integer
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, ${q.connection.driver.escape(schema)}, pg_temp AS $$
      DECLARE
        deleted integer;
      BEGIN
        IF cutoff IS NULL OR batch_size IS NULL OR batch_size < 1 OR batch_size > 10000 THEN
          RAISE EXCEPTION 'audit_prune: cutoff must be set and batch_size between 1 and 10000' USING ERRCODE = '22023';
        END IF;
        -- Replicas pruning at once skip each other's rows rather than wait.
        DELETE FROM audit_events a
         USING (SELECT id FROM audit_events WHERE created_at < least(cutoff, now() - ${floor})
                 ORDER BY created_at LIMIT batch_size FOR UPDATE SKIP LOCKED) doomed
         WHERE a.id = doomed.id;
        GET DIAGNOSTICS deleted = ROW_COUNT;
        RETURN deleted;
      END
      $$`);
    await q.query(`REVOKE ALL ON FUNCTION audit_prune(timestamptz, integer) FROM PUBLIC`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP FUNCTION audit_prune(timestamptz, integer)`);
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND current_setting('audit.retention', true) = 'on' THEN
          RETURN OLD;
        END IF;
        RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP USING ERRCODE = '42501';
      END
      $$`);
  }
}
