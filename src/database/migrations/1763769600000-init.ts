import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

export class Init1763769600000 implements MigrationInterface {
  name = 'Init1763769600000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`
      CREATE TABLE orgs (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL,
        plan text NOT NULL DEFAULT 'free' CHECK (plan IN ('free', 'pro')),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE users (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        email text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX users_email_key ON users (lower(email))`);
    await q.query(`
      CREATE TABLE memberships (
        org_id uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        role text NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (org_id, user_id)
      )`);
    // Session org resolution looks memberships up by user.
    await q.query(`CREATE INDEX memberships_user_id_idx ON memberships (user_id)`);
    await q.query(`
      CREATE TABLE workspaces (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT workspaces_org_user_key UNIQUE (org_id, user_id)
      )`);
    // api_keys and usage_counters carry no foreign keys into the directory tables: a host may
    // keep its orgs and users elsewhere (its own OrgDirectory), and the ids must still be accepted.
    await q.query(`
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id uuid NOT NULL,
        org_id uuid NOT NULL,
        name text NOT NULL DEFAULT '',
        lookup text NOT NULL,
        last4 text NOT NULL,
        key_hash bytea NOT NULL,
        scopes text[] NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz,
        last_used_at timestamptz,
        revoked_at timestamptz,
        CONSTRAINT api_keys_lookup_key UNIQUE (lookup)
      )`);
    // Listing is "the caller's keys, newest first".
    await q.query(`CREATE INDEX api_keys_user_created_idx ON api_keys (user_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX api_keys_org_id_idx ON api_keys (org_id)`);
    await q.query(`
      CREATE TABLE usage_counters (
        org_id uuid NOT NULL,
        day date NOT NULL,
        asks integer NOT NULL DEFAULT 0 CHECK (asks >= 0),
        retrieves integer NOT NULL DEFAULT 0 CHECK (retrieves >= 0),
        imports integer NOT NULL DEFAULT 0 CHECK (imports >= 0),
        captures integer NOT NULL DEFAULT 0 CHECK (captures >= 0),
        PRIMARY KEY (org_id, day)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP TABLE usage_counters`);
    await q.query(`DROP TABLE api_keys`);
    await q.query(`DROP TABLE workspaces`);
    await q.query(`DROP TABLE memberships`);
    await q.query(`DROP TABLE users`);
    await q.query(`DROP TABLE orgs`);
  }
}
