import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';
import { AUDIT_RETENTION_FLOOR_DAYS } from './1764910001000-audit-owner-only-retention.js';

/**
 * A person's erasure rewrites their past audit events without opening the log to other changes:
 * - `audit_pseudonymise(subject, pseudonym, email)`, a SECURITY DEFINER function (it runs as the
 *   table's owner), replaces the user id `subject` by `pseudonym` wherever an event names it (actor,
 *   target, and inside `details`), and their e-mail inside `details` (any case) by `[erased]`. It
 *   marks its transaction with what it may write (`kui.audit_pseudonymise` = subject:pseudonym),
 *   and clears the mark before it returns. EXECUTE is revoked from PUBLIC and granted to the
 *   service role with its other privileges (src/database/roles.ts).
 * - the trigger lets an UPDATE through only when the updating role has the owner's rights, the
 *   transaction carries that mark, and the row changes in no other way than that rewrite: every
 *   other column equal, actor_id and target_id either unchanged or subject -> pseudonym. Every other
 *   UPDATE, TRUNCATE, and DELETE is refused as before.
 */
export class AuditPseudonymise1765400000000 implements MigrationInterface {
  name = 'AuditPseudonymise1765400000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    const [{ schema }] = (await q.query(`SELECT current_schema() AS schema`)) as Array<{ schema: string }>;
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        owner_rights boolean := pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'USAGE');
        mark text[];
      BEGIN
        IF TG_OP = 'DELETE' THEN
          IF owner_rights AND OLD.created_at < now() - interval '${AUDIT_RETENTION_FLOOR_DAYS} days' THEN
            RETURN OLD;
          END IF;
        ELSIF TG_OP = 'UPDATE' AND owner_rights THEN
          mark := string_to_array(nullif(current_setting('kui.audit_pseudonymise', true), ''), ':');
          IF array_length(mark, 1) = 2
             AND (NEW.id, NEW.created_at, NEW.org_id, NEW.action, NEW.actor_type, NEW.actor_source, NEW.credential_type,
                  NEW.credential_id, NEW.target_type, NEW.client_address, NEW.user_agent, NEW.request_id)
                 IS NOT DISTINCT FROM
                 (OLD.id, OLD.created_at, OLD.org_id, OLD.action, OLD.actor_type, OLD.actor_source, OLD.credential_type,
                  OLD.credential_id, OLD.target_type, OLD.client_address, OLD.user_agent, OLD.request_id)
             AND (NEW.actor_id IS NOT DISTINCT FROM OLD.actor_id OR (OLD.actor_id = mark[1]::uuid AND NEW.actor_id = mark[2]::uuid))
             AND (NEW.target_id = OLD.target_id OR (OLD.target_id = mark[1]::uuid AND NEW.target_id = mark[2]::uuid)) THEN
            RETURN NEW;
          END IF;
        END IF;
        RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP USING ERRCODE = '42501';
      END
      $$`);
    // pg_catalog first and pg_temp last: nothing a caller creates can stand in for what it calls.
    await q.query(`
      CREATE FUNCTION audit_pseudonymise(subject uuid, pseudonym uuid, email text) RETURNS integer
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, ${q.connection.driver.escape(schema)}, pg_temp AS $$
      DECLARE
        changed integer;
        -- The e-mail as it appears inside JSON text (quotes and backslashes escaped), as a
        -- case-insensitive regular expression matching it literally.
        pattern text;
      BEGIN
        IF subject IS NULL OR pseudonym IS NULL OR subject = pseudonym OR email IS NULL OR length(email) < 3 THEN
          RAISE EXCEPTION 'audit_pseudonymise: subject, a different pseudonym and the e-mail must be given' USING ERRCODE = '22023';
        END IF;
        pattern := regexp_replace(substr(to_jsonb(email)::text, 2, length(to_jsonb(email)::text) - 2), '([^A-Za-z0-9@_ -])', '\\\\\\1', 'g');
        PERFORM set_config('kui.audit_pseudonymise', subject::text || ':' || pseudonym::text, true);
        UPDATE audit_events
           SET actor_id = CASE WHEN actor_id = subject THEN pseudonym ELSE actor_id END,
               target_id = CASE WHEN target_id = subject THEN pseudonym ELSE target_id END,
               details = regexp_replace(replace(details::text, subject::text, pseudonym::text), pattern, '[erased]', 'gi')::jsonb
         WHERE actor_id = subject OR target_id = subject
            OR strpos(details::text, subject::text) > 0 OR details::text ~* pattern;
        GET DIAGNOSTICS changed = ROW_COUNT;
        PERFORM set_config('kui.audit_pseudonymise', '', true);
        RETURN changed;
      END
      $$`);
    await q.query(`REVOKE ALL ON FUNCTION audit_pseudonymise(uuid, uuid, text) FROM PUBLIC`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP FUNCTION audit_pseudonymise(uuid, uuid, text)`);
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' THEN
          IF pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'USAGE')
             AND OLD.created_at < now() - interval '${AUDIT_RETENTION_FLOOR_DAYS} days' THEN
            RETURN OLD;
          END IF;
        END IF;
        RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP USING ERRCODE = '42501';
      END
      $$`);
  }
}
