import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit log (src/audit/). Append-only in the database itself: a trigger refuses every UPDATE,
 * every TRUNCATE, and every DELETE except in a transaction that has set `audit.retention = on`
 * (only AuditRepository.pruneBatch does, for the retention job).
 */
export class AuditEvents1764200000000 implements MigrationInterface {
  name = 'AuditEvents1764200000000';

  async up(q: QueryRunner): Promise<void> {
    // No foreign keys into the directory: a host may keep its orgs and users elsewhere, and an
    // event must outlive the key, member or org it names.
    await q.query(`
      CREATE TABLE audit_events (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        created_at timestamptz NOT NULL,
        org_id uuid NOT NULL,
        action text NOT NULL,
        actor_type text NOT NULL CONSTRAINT audit_events_actor_type_check CHECK (actor_type IN ('user', 'operator', 'system')),
        actor_id uuid,
        actor_source text,
        credential_type text CONSTRAINT audit_events_credential_type_check CHECK (credential_type IN ('session', 'api_key')),
        credential_id uuid,
        target_type text NOT NULL,
        target_id uuid NOT NULL,
        client_address text,
        user_agent text,
        request_id text,
        details jsonb NOT NULL
      )`);
    // Reading an org's log newest first (keyset), and pruning by age.
    await q.query(`CREATE INDEX audit_events_org_created_idx ON audit_events (org_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX audit_events_created_idx ON audit_events (created_at)`);
    await q.query(`
      CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND current_setting('audit.retention', true) = 'on' THEN
          RETURN OLD;
        END IF;
        RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP USING ERRCODE = '42501';
      END
      $$`);
    await q.query(`
      CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
        FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()`);
    await q.query(`
      CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
        FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE audit_events`);
    await q.query(`DROP FUNCTION audit_events_append_only()`);
  }
}
