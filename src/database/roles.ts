import type { DataSource } from 'typeorm';

/**
 * The two database roles. The *owner* runs the migrations and owns every table and function;
 * the *service* role is what the running service connects as, with exactly these privileges in
 * the schema: read and write every table, except the audit log (read and append only: never
 * UPDATE, DELETE or TRUNCATE; it is pruned through the owner's `audit_prune` function, and an
 * erased person's events are rewritten through `audit_pseudonymise`) and
 * TypeORM's migrations table (read only). It owns nothing, so it can neither disable a trigger
 * nor replace a function. Granted again after every migration run, so a new table is covered.
 */
const grants = (schema: string, role: string, migrationsTable: string) => [
  `GRANT USAGE ON SCHEMA ${schema} TO ${role}`,
  `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${role}`,
  `GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ${schema} TO ${role}`,
  `REVOKE ALL ON ${schema}.audit_events FROM ${role}`,
  `GRANT SELECT, INSERT ON ${schema}.audit_events TO ${role}`,
  `REVOKE ALL ON ${schema}.${migrationsTable} FROM ${role}`,
  `GRANT SELECT ON ${schema}.${migrationsTable} TO ${role}`,
  `GRANT EXECUTE ON FUNCTION ${schema}.audit_prune(timestamptz, integer) TO ${role}`,
  `GRANT EXECUTE ON FUNCTION ${schema}.audit_pseudonymise(uuid, uuid, text) TO ${role}`,
];

/** Whether `role` already has the owner's rights over the audit log (it owns it, is a member of its owner, or is a superuser). */
const HAS_OWNER_RIGHTS = `
  SELECT pg_has_role($1::text, c.relowner, 'USAGE') AS owner
    FROM pg_class c WHERE c.oid = to_regclass(quote_ident(current_schema()) || '.audit_events')`;

/**
 * Gives the service role `role` its privileges, on the owner's connection `owner`, in the
 * schema the owner's migrations ran in. Nothing to do (and nothing revoked) when `role` has the
 * owner's rights anyway: see `serviceRoleWarning`.
 */
export async function grantServiceRole(owner: DataSource, role: string): Promise<void> {
  await owner.transaction(async (m) => {
    const [row] = await m.query<Array<{ owner: boolean }>>(HAS_OWNER_RIGHTS, [role]);
    if (!row || row.owner) return;
    const [{ schema }] = await m.query<Array<{ schema: string }>>(`SELECT current_schema() AS schema`);
    const escape = (name: string) => owner.driver.escape(name);
    const table = owner.options.migrationsTableName ?? 'migrations';
    for (const sql of grants(escape(schema), escape(role), escape(table))) await m.query(sql);
  });
}

/** The role a connection runs as (after any SET ROLE). */
export async function currentRole(ds: DataSource): Promise<string> {
  const [{ role }] = await ds.query<Array<{ role: string }>>(`SELECT current_user AS role`);
  return role;
}

/**
 * A warning when the service's connection has the owner's rights over the audit log: the
 * append-only rules then hold against the service's statements only as long as it does not
 * disable the trigger itself. Null when the roles are separate.
 */
export async function serviceRoleWarning(service: DataSource): Promise<string | null> {
  const role = await currentRole(service);
  const [row] = await service.query<Array<{ owner: boolean }>>(HAS_OWNER_RIGHTS, [role]);
  if (!row?.owner) return null;
  return (
    `DATABASE_URL's role "${role}" owns the schema (or is a superuser): the audit log is append-only only as long as ` +
    'the service does not disable its trigger. Connect the service as a role of its own and run migrations as the owner ' +
    'through DATABASE_MIGRATION_URL (see the operations docs, "Database roles")'
  );
}

/** The embedded database's service role (PGlite: one database, one session, which SETs this ROLE after migrations). */
export const EMBEDDED_SERVICE_ROLE = 'kui_service';

/**
 * The embedded database's two roles: the bootstrap superuser `postgres` owns everything and runs
 * the migrations; then the session takes EMBEDDED_SERVICE_ROLE for good, for the server, every
 * client of its socket (the CLI, the job queue: one shared session) and the CLI on its own. The
 * job queue's schema (pgboss) is created, or was created before the roles existed, by the
 * service role's session: it is handed to that role, which needs to alter it when pg-boss upgrades.
 */
export async function useEmbeddedServiceRole(ds: DataSource): Promise<void> {
  const role = EMBEDDED_SERVICE_ROLE;
  // Not migrated (DB_MIGRATE=false on a new data directory): nothing to guard yet. Already taken: nothing to do.
  const [state] = await ds.query<Array<{ migrated: boolean; taken: boolean }>>(
    `SELECT to_regprocedure('audit_prune(timestamptz, integer)') IS NOT NULL AS migrated, current_user = $1 AS taken`,
    [role],
  );
  if (!state.migrated || state.taken) return;
  await ds.query(`DO $$ BEGIN CREATE ROLE ${role} NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`);
  await ds.query(`DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO ${role}', current_database()); END $$`);
  await ds.query(`
    DO $$
    DECLARE o record;
    BEGIN
      IF to_regnamespace('pgboss') IS NULL OR (SELECT nspowner FROM pg_namespace WHERE nspname = 'pgboss') = '${role}'::regrole THEN
        RETURN;
      END IF;
      EXECUTE 'ALTER SCHEMA pgboss OWNER TO ${role}';
      FOR o IN SELECT c.oid::regclass AS name, c.relkind FROM pg_class c
                WHERE c.relnamespace = 'pgboss'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
                  -- a sequence owned by a column follows its table
                  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i'))
                ORDER BY c.relkind = 'S' LOOP
        EXECUTE format(CASE WHEN o.relkind = 'S' THEN 'ALTER SEQUENCE %s OWNER TO ${role}' ELSE 'ALTER TABLE %s OWNER TO ${role}' END, o.name);
      END LOOP;
      FOR o IN SELECT p.oid::regprocedure AS name, p.prokind FROM pg_proc p WHERE p.pronamespace = 'pgboss'::regnamespace LOOP
        EXECUTE format(CASE WHEN o.prokind = 'p' THEN 'ALTER PROCEDURE %s OWNER TO ${role}' ELSE 'ALTER FUNCTION %s OWNER TO ${role}' END, o.name);
      END LOOP;
      FOR o IN SELECT t.oid::regtype AS name FROM pg_type t
                WHERE t.typnamespace = 'pgboss'::regnamespace AND t.typtype IN ('e', 'd') LOOP
        EXECUTE format('ALTER TYPE %s OWNER TO ${role}', o.name);
      END LOOP;
    END $$`);
  await grantServiceRole(ds, role);
  await ds.query(`SET ROLE ${role}`);
}
