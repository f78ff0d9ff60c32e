import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * The meters a deployment defines (USAGE_METERS, the module option `meters`): a row per org, UTC
 * day and meter in `usage_meter_counters`, split by credential in `usage_meter_attribution`, and
 * `kui_charge_meter_batch`, which charges a turn's batch of them in one statement and one commit.
 *
 * Why rows of their own and not more columns (or a jsonb column) on `usage_counters`: the
 * contract's four meters keep their row, their statement and their row lock exactly as they were
 * (`kui_charge_batch`, and key verification reading the day's row in the same statement), so
 * their charging costs what it cost; a deployment meter is charged under its own row's lock, so a
 * busy meter never queues behind another; and any number of names needs no schema change.
 */
export class DeploymentMeters1766000000020 implements MigrationInterface {
  name = 'DeploymentMeters1766000000020';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`
      CREATE TABLE usage_meter_counters (
        org_id uuid NOT NULL,
        day date NOT NULL,
        meter text NOT NULL,
        used integer NOT NULL DEFAULT 0 CHECK (used >= 0),
        plan text,
        meter_limit integer,
        PRIMARY KEY (org_id, day, meter)
      )`);
    // Retention prunes by day across orgs.
    await q.query(`CREATE INDEX usage_meter_counters_day_idx ON usage_meter_counters (day)`);
    // Its key order is usage_attribution's with the meter last, so the export by credential reads both in one order.
    await q.query(`
      CREATE TABLE usage_meter_attribution (
        org_id uuid NOT NULL,
        day date NOT NULL,
        credential_kind text NOT NULL CHECK (credential_kind IN ('api_key', 'session', 'system')),
        credential_id uuid NOT NULL,
        meter text NOT NULL,
        user_id uuid,
        used integer NOT NULL DEFAULT 0 CHECK (used >= 0),
        PRIMARY KEY (org_id, day, credential_kind, credential_id, meter)
      )`);
    await q.query(
      `CREATE INDEX usage_meter_attribution_credential_idx ON usage_meter_attribution (credential_id, day)`,
    );
    await q.query(`CREATE INDEX usage_meter_attribution_day_idx ON usage_meter_attribution (day)`);
    await q.query(CHARGE_METER_BATCH_FUNCTION);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP FUNCTION kui_charge_meter_batch`);
    await q.query(`DROP TABLE usage_meter_attribution`);
    await q.query(`DROP TABLE usage_meter_counters`);
  }
}

/**
 * kui_charge_batch's rules for the deployment's meters: every charge decided alone, all or
 * nothing, in arrival order within its (org, day, meter), never past its limit; a charge that
 * passes adds to its credential's row in the same transaction. Fast path: a group of charges of
 * one (org, day, meter) that fits as a whole is applied by one upsert of its sum, and that one
 * statement locks every row of the batch in (org, day, meter) order (no deadlock between the
 * batches of several processes). Slow path: a group that does not fit is decided charge by
 * charge on rows this transaction already holds; a row inserted as zeros only to take its lock in
 * order is deleted at the end if all its charges were refused.
 * Returns one row per charge that passed: its position (1-based), the meter's count after it,
 * and the day's counters of the contract's meters as this transaction sees them (not locked).
 */
const CHARGE_METER_BATCH_FUNCTION = `
CREATE FUNCTION kui_charge_meter_batch(
  p_org uuid[], p_day date[], p_meter text[], p_count integer[], p_limit integer[], p_plan text[],
  p_kind text[], p_credential uuid[], p_user uuid[], p_async boolean)
RETURNS TABLE (idx integer, r_used integer, r_asks integer, r_retrieves integer, r_imports integer, r_captures integer)
LANGUAGE plpgsql AS $fn$
DECLARE
  j integer;
  n integer;
  v_used integer;
  done integer[];
  f_used integer[];
  z_org uuid[];
  z_day date[];
  z_meter text[];
BEGIN
  IF p_async THEN
    PERFORM set_config('synchronous_commit', 'off', true);
  END IF;

  WITH ch AS (
    SELECT t.org, t.day, t.meter, t.cnt, t.lim, t.plan, t.kind, t.cred, t.usr, t.j::integer AS j
      FROM unnest(p_org, p_day, p_meter, p_count, p_limit, p_plan, p_kind, p_credential, p_user)
           WITH ORDINALITY AS t(org, day, meter, cnt, lim, plan, kind, cred, usr, j)
  ), g AS (
    SELECT org, day, meter, sum(cnt) AS cnt, min(plan) AS plan, min(lim) AS lim,
           -- One plan and one limit for the whole group, or it is decided charge by charge.
           min(plan) = max(plan) AND min(coalesce(lim, -1)) = max(coalesce(lim, -1)) AS uniform
      FROM ch GROUP BY org, day, meter
  ), fit AS (
    SELECT g.*, uniform AND cnt <= coalesce(lim, 2147483647) AS fits FROM g
  ), up AS (
    INSERT INTO usage_meter_counters AS u (org_id, day, meter, used, plan, meter_limit)
    SELECT org, day, meter, CASE WHEN fits THEN cnt::integer ELSE 0 END, CASE WHEN fits THEN plan END,
           CASE WHEN fits THEN lim END
      FROM fit ORDER BY org, day, meter
    ON CONFLICT (org_id, day, meter) DO UPDATE
       SET used = u.used + EXCLUDED.used, plan = EXCLUDED.plan, meter_limit = EXCLUDED.meter_limit
     WHERE EXCLUDED.plan IS NOT NULL AND u.used::bigint + EXCLUDED.used <= coalesce(EXCLUDED.meter_limit, 2147483647)
    RETURNING u.org_id, u.day, u.meter, u.used, u.plan IS NOT NULL AS ok
  ), att AS (
    INSERT INTO usage_meter_attribution AS x (org_id, day, credential_kind, credential_id, meter, user_id, used)
    SELECT ch.org, ch.day, ch.kind, ch.cred, ch.meter, (array_agg(ch.usr))[1], sum(ch.cnt)
      FROM ch JOIN up ON up.org_id = ch.org AND up.day = ch.day AND up.meter = ch.meter AND up.ok
     GROUP BY ch.org, ch.day, ch.kind, ch.cred, ch.meter
     ORDER BY ch.org, ch.day, ch.kind, ch.cred, ch.meter
    ON CONFLICT (org_id, day, credential_kind, credential_id, meter) DO UPDATE SET used = x.used + EXCLUDED.used
  ), after_each AS (
    -- The meter's count after each charge: the group's final count less what later charges added.
    SELECT ch.j, up.used - coalesce(sum(ch.cnt) OVER w, 0) AS fu
      FROM ch JOIN up ON up.org_id = ch.org AND up.day = ch.day AND up.meter = ch.meter AND up.ok
    WINDOW w AS (PARTITION BY ch.org, ch.day, ch.meter ORDER BY ch.j ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)
  )
  SELECT array_agg(e.j), array_agg(e.fu::integer),
         (SELECT array_agg(up.org_id) FROM up WHERE NOT up.ok), (SELECT array_agg(up.day) FROM up WHERE NOT up.ok),
         (SELECT array_agg(up.meter) FROM up WHERE NOT up.ok)
    INTO done, f_used, z_org, z_day, z_meter
    FROM after_each e;

  FOR j IN SELECT t.j FROM unnest(p_org, p_day, p_meter) WITH ORDINALITY AS t(o, d, m, j)
            WHERE NOT (t.j::integer = ANY (coalesce(done, '{}'))) ORDER BY t.o, t.d, t.m, t.j LOOP
    n := p_count[j];
    INSERT INTO usage_meter_counters AS c (org_id, day, meter, used, plan, meter_limit)
    SELECT p_org[j], p_day[j], p_meter[j], n, p_plan[j], p_limit[j]
     WHERE n <= coalesce(p_limit[j], 2147483647)
    ON CONFLICT (org_id, day, meter) DO UPDATE
       SET used = c.used + EXCLUDED.used, plan = EXCLUDED.plan, meter_limit = EXCLUDED.meter_limit
     WHERE c.used::bigint + EXCLUDED.used <= coalesce(p_limit[j], 2147483647)
    RETURNING c.used INTO v_used;
    IF FOUND THEN
      INSERT INTO usage_meter_attribution AS a (org_id, day, credential_kind, credential_id, meter, user_id, used)
      VALUES (p_org[j], p_day[j], p_kind[j], p_credential[j], p_meter[j], p_user[j], n)
      ON CONFLICT (org_id, day, credential_kind, credential_id, meter) DO UPDATE SET used = a.used + EXCLUDED.used;
      done := array_append(done, j);
      f_used := array_append(f_used, v_used);
    END IF;
  END LOOP;

  -- A zero row inserted only to take its lock in order, whose charges were all refused, goes:
  -- a refused charge records nothing.
  IF z_org IS NOT NULL THEN
    DELETE FROM usage_meter_counters u USING unnest(z_org, z_day, z_meter) AS z(org, day, meter)
     WHERE u.org_id = z.org AND u.day = z.day AND u.meter = z.meter AND u.plan IS NULL AND u.used = 0;
  END IF;

  RETURN QUERY
    SELECT d.j, d.u, coalesce(c.asks, 0), coalesce(c.retrieves, 0), coalesce(c.imports, 0), coalesce(c.captures, 0)
      FROM unnest(done, f_used) AS d(j, u)
      LEFT JOIN usage_counters c ON c.org_id = p_org[d.j] AND c.day = p_day[d.j];
END
$fn$`;
