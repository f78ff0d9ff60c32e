import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * Events out: the transactional outbox, webhook endpoints, their delivery attempts,
 * and the marks that make scheduled and threshold events fire once.
 */
export class Events1764400000000 implements MigrationInterface {
  name = 'Events1764400000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    // Written in the same transaction as the change; the relay moves rows into pg-boss jobs and deletes them.
    await q.query(`
      CREATE TABLE event_outbox (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL,
        type text NOT NULL,
        data jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX event_outbox_created_idx ON event_outbox (created_at)`);
    await q.query(`
      CREATE TABLE webhook_endpoints (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL,
        url text NOT NULL,
        description text NOT NULL DEFAULT '',
        event_types text[] NOT NULL,
        enabled boolean NOT NULL DEFAULT true,
        secret_box bytea NOT NULL,
        failing_since timestamptz,
        created_by uuid NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX webhook_endpoints_org_created_idx ON webhook_endpoints (org_id, created_at, id)`);
    await q.query(`
      CREATE TABLE webhook_deliveries (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        endpoint_id uuid NOT NULL,
        event_id uuid NOT NULL,
        event_type text NOT NULL,
        job_id uuid NOT NULL,
        attempt integer NOT NULL,
        status text NOT NULL,
        response_status integer,
        latency_ms integer NOT NULL,
        response_body text,
        error text,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT webhook_deliveries_job_attempt_key UNIQUE (job_id, attempt),
        CONSTRAINT webhook_deliveries_status_check CHECK (status IN ('succeeded', 'failed'))
      )`);
    await q.query(
      `CREATE INDEX webhook_deliveries_endpoint_created_idx ON webhook_deliveries (endpoint_id, created_at, id)`,
    );
    // (kind, subject, mark): an expiry warning per key and window, a threshold per org, meter, day and level.
    await q.query(`
      CREATE TABLE event_marks (
        kind text NOT NULL,
        subject text NOT NULL,
        mark text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (kind, subject, mark)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP TABLE event_marks`);
    await q.query(`DROP TABLE webhook_deliveries`);
    await q.query(`DROP TABLE webhook_endpoints`);
    await q.query(`DROP TABLE event_outbox`);
  }
}
