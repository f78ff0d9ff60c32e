import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * Org key policies: one row per org that set one (no row: no policy). No foreign key to orgs, as
 * for api_keys: a host with its own directory has no orgs table. `api_keys.approval` marks a
 * key minted under the approval policy (`pending`) or refused by an admin (`denied`); null for
 * every other key, so keys minted before this migration are untouched. `api_key_stale_warnings`
 * remembers which key was warned of its coming stale revoke, and when, so the warning is sent once
 * per idle period whichever instance runs the job.
 */
export class OrgKeyPolicies1765300000000 implements MigrationInterface {
  name = 'OrgKeyPolicies1765300000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`
      CREATE TABLE org_key_policies (
        org_id uuid PRIMARY KEY,
        max_lifetime_days integer CHECK (max_lifetime_days BETWEEN 1 AND 366),
        require_expiry boolean NOT NULL DEFAULT false,
        stale_after_days integer CHECK (stale_after_days BETWEEN 30 AND 730),
        allowed_scopes_by_role jsonb,
        approval_required_for text[],
        updated_at timestamptz NOT NULL,
        updated_by uuid
      )`);
    await q.query(`ALTER TABLE api_keys ADD COLUMN approval text CHECK (approval IN ('pending', 'denied'))`);
    await q.query(`
      CREATE TABLE api_key_stale_warnings (
        key_id uuid PRIMARY KEY REFERENCES api_keys(id) ON DELETE CASCADE,
        warned_at timestamptz NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP TABLE api_key_stale_warnings`);
    await q.query(`ALTER TABLE api_keys DROP COLUMN approval`);
    await q.query(`DROP TABLE org_key_policies`);
  }
}
