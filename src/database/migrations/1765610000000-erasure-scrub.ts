import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';
import { AUDIT_RETENTION_FLOOR_DAYS } from './1764910001000-audit-owner-only-retention.js';

/**
 * Erasure takes more out of the audit log, and less out of other people's rows:
 * - `audit_pseudonymise` also clears `client_address` and `user_agent` on the events the subject
 *   made (actor = subject): their addresses and browsers no longer stay tied to the pseudonym.
 *   Events where the subject is only the target keep the actor's (someone else's) address.
 * - its e-mail match is anchored at e-mail boundaries: no local-part character (nor a JSON
 *   escape's letter, `\n` before the address is a boundary) before it, no domain character (nor
 *   a dot and one) after it, so erasing ann@example.com leaves joann@example.com and
 *   ann@example.com.au alone.
 * - the trigger lets exactly that through under the function's mark: both columns may only go
 *   from the subject's value to NULL, on the subject's own events.
 */
export class ErasureScrub1765610000000 implements MigrationInterface {
  name = 'ErasureScrub1765610000000';

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
                  NEW.credential_id, NEW.target_type, NEW.request_id)
                 IS NOT DISTINCT FROM
                 (OLD.id, OLD.created_at, OLD.org_id, OLD.action, OLD.actor_type, OLD.actor_source, OLD.credential_type,
                  OLD.credential_id, OLD.target_type, OLD.request_id)
             AND (NEW.client_address IS NOT DISTINCT FROM OLD.client_address
                  OR (OLD.actor_id = mark[1]::uuid AND NEW.client_address IS NULL))
             AND (NEW.user_agent IS NOT DISTINCT FROM OLD.user_agent
                  OR (OLD.actor_id = mark[1]::uuid AND NEW.user_agent IS NULL))
             AND (NEW.actor_id IS NOT DISTINCT FROM OLD.actor_id OR (OLD.actor_id = mark[1]::uuid AND NEW.actor_id = mark[2]::uuid))
             AND (NEW.target_id = OLD.target_id OR (OLD.target_id = mark[1]::uuid AND NEW.target_id = mark[2]::uuid)) THEN
            RETURN NEW;
          END IF;
        END IF;
        RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP USING ERRCODE = '42501';
      END
      $$`);
    // CREATE OR REPLACE keeps the function's owner and its grants (EXECUTE for the service role only).
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_pseudonymise(subject uuid, pseudonym uuid, email text) RETURNS integer
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, ${q.connection.driver.escape(schema)}, pg_temp AS $$
      DECLARE
        changed integer;
        -- The e-mail as it appears inside JSON text (quotes and backslashes escaped), as a
        -- case-insensitive regular expression matching it literally, at e-mail boundaries.
        pattern text;
      BEGIN
        IF subject IS NULL OR pseudonym IS NULL OR subject = pseudonym OR email IS NULL OR length(email) < 3 THEN
          RAISE EXCEPTION 'audit_pseudonymise: subject, a different pseudonym and the e-mail must be given' USING ERRCODE = '22023';
        END IF;
        pattern := '(?:(?<![A-Za-z0-9.!#$%&''*+/=?^_\`{|}~-])|(?<=\\\\[nrtbf]))'
          || regexp_replace(substr(to_jsonb(email)::text, 2, length(to_jsonb(email)::text) - 2), '([^A-Za-z0-9@_ -])', '\\\\\\1', 'g')
          || '(?![A-Za-z0-9_-]|\\.[A-Za-z0-9])';
        PERFORM set_config('kui.audit_pseudonymise', subject::text || ':' || pseudonym::text, true);
        UPDATE audit_events
           SET actor_id = CASE WHEN actor_id = subject THEN pseudonym ELSE actor_id END,
               target_id = CASE WHEN target_id = subject THEN pseudonym ELSE target_id END,
               client_address = CASE WHEN actor_id = subject THEN NULL ELSE client_address END,
               user_agent = CASE WHEN actor_id = subject THEN NULL ELSE user_agent END,
               details = regexp_replace(replace(details::text, subject::text, pseudonym::text), pattern, '[erased]', 'gi')::jsonb
         WHERE actor_id = subject OR target_id = subject
            OR strpos(details::text, subject::text) > 0 OR details::text ~* pattern;
        GET DIAGNOSTICS changed = ROW_COUNT;
        PERFORM set_config('kui.audit_pseudonymise', '', true);
        RETURN changed;
      END
      $$`);
  }

  /** The previous definitions (1765400000000). */
  async down(q: QueryRunner): Promise<void> {
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
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_pseudonymise(subject uuid, pseudonym uuid, email text) RETURNS integer
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, ${q.connection.driver.escape(schema)}, pg_temp AS $$
      DECLARE
        changed integer;
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
  }
}
