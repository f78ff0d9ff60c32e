import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * Usage history: each day's counter row also records the plan and limits the day was
 * charged under; `usage_attribution` splits the same totals by the credential that charged them;
 * `kui_charge_batch` charges a whole turn's batch in one statement and one commit.
 */
export class UsageHistory1764300000000 implements MigrationInterface {
  name = 'UsageHistory1764300000000';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`ALTER TABLE usage_counters ADD COLUMN plan text, ADD COLUMN wallet_limit integer,
                     ADD COLUMN imports_limit integer, ADD COLUMN captures_limit integer`);
    // Retention prunes by day across orgs.
    await q.query(`CREATE INDEX usage_counters_day_idx ON usage_counters (day)`);
    await q.query(`
      CREATE TABLE usage_attribution (
        org_id uuid NOT NULL,
        day date NOT NULL,
        credential_kind text NOT NULL CHECK (credential_kind IN ('api_key', 'session', 'system')),
        credential_id uuid NOT NULL,
        user_id uuid,
        asks integer NOT NULL DEFAULT 0 CHECK (asks >= 0),
        retrieves integer NOT NULL DEFAULT 0 CHECK (retrieves >= 0),
        imports integer NOT NULL DEFAULT 0 CHECK (imports >= 0),
        captures integer NOT NULL DEFAULT 0 CHECK (captures >= 0),
        PRIMARY KEY (org_id, day, credential_kind, credential_id)
      )`);
    await q.query(`CREATE INDEX usage_attribution_credential_idx ON usage_attribution (credential_id, day)`);
    await q.query(`CREATE INDEX usage_attribution_day_idx ON usage_attribution (day)`);
    // What was charged before attribution existed is the system's, so the split always sums to the meter.
    await q.query(`
      INSERT INTO usage_attribution (org_id, day, credential_kind, credential_id, user_id, asks, retrieves, imports, captures)
      SELECT org_id, day, 'system', '00000000-0000-0000-0000-000000000000', NULL, asks, retrieves, imports, captures
        FROM usage_counters`);
    await q.query(CHARGE_BATCH_FUNCTION);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP FUNCTION kui_charge_batch`);
    await q.query(`DROP TABLE usage_attribution`);
    await q.query(`DROP INDEX usage_counters_day_idx`);
    await q.query(
      `ALTER TABLE usage_counters DROP COLUMN plan, DROP COLUMN wallet_limit, DROP COLUMN imports_limit, DROP COLUMN captures_limit`,
    );
  }
}

/**
 * Charges a batch in one call and one transaction. Every charge is decided alone, all or
 * nothing, in arrival order within its org, never past a limit; a charge that passes also adds
 * to its credential's attribution row in the same transaction.
 *
 * Fast path, set-based: the charges are grouped by (org, day) and each group is applied by one
 * upsert of its sums when the sums fit (the usual case: then every charge of the group passes
 * in arrival order anyway, and the counters after each charge follow from the running sums).
 * All the batch's counter rows are locked by that one statement, in (org, day) order, so
 * batches of several processes cannot deadlock, and a hot org's row is locked once per batch.
 * Slow path: a group whose sums do not fit (near a limit) is decided charge by charge with the
 * same upsert, on rows this transaction already holds. A group whose row did not exist and did
 * not fit is inserted as zeros first, so that its lock is taken in order too, and deleted at the
 * end if all its charges were refused (a refused charge records nothing).
 * `p_async` sets synchronous_commit = off for this transaction only (an operator's choice).
 * Returns one row per charge that passed: its position (1-based) and the counters after it.
 */
const CHARGE_BATCH_FUNCTION = `
CREATE FUNCTION kui_charge_batch(
  p_org uuid[], p_day date[], p_meter text[], p_count integer[], p_limit integer[],
  p_plan text[], p_wallet_limit integer[], p_imports_limit integer[], p_captures_limit integer[],
  p_kind text[], p_credential uuid[], p_user uuid[], p_async boolean)
RETURNS TABLE (idx integer, r_asks integer, r_retrieves integer, r_imports integer, r_captures integer)
LANGUAGE plpgsql AS $fn$
DECLARE
  j integer;
  n integer;
  m text;
  done integer[];
  f_asks integer[];
  f_retrieves integer[];
  f_imports integer[];
  f_captures integer[];
  z_org uuid[];
  z_day date[];
BEGIN
  IF p_async THEN
    PERFORM set_config('synchronous_commit', 'off', true);
  END IF;

  WITH ch AS (
    SELECT t.org, t.day, t.meter, t.n, t.plan, t.wl, t.il, t.cl, t.kind, t.cred, t.usr, t.j::integer AS j,
           CASE WHEN t.meter = 'asks' THEN t.n ELSE 0 END AS a, CASE WHEN t.meter = 'retrieves' THEN t.n ELSE 0 END AS r,
           CASE WHEN t.meter = 'imports' THEN t.n ELSE 0 END AS i, CASE WHEN t.meter = 'captures' THEN t.n ELSE 0 END AS c
      FROM unnest(p_org, p_day, p_meter, p_count, p_plan, p_wallet_limit, p_imports_limit, p_captures_limit, p_kind, p_credential, p_user)
           WITH ORDINALITY AS t(org, day, meter, n, plan, wl, il, cl, kind, cred, usr, j)
  ), g AS (
    SELECT org, day, sum(a) AS a, sum(r) AS r, sum(i) AS i, sum(c) AS c, min(plan) AS plan, min(wl) AS wl, min(il) AS il, min(cl) AS cl,
           -- One plan and one set of limits for the whole group, or it is decided charge by charge.
           min(plan) = max(plan) AND min(coalesce(wl, -1)) = max(coalesce(wl, -1))
             AND min(coalesce(il, -1)) = max(coalesce(il, -1)) AND min(coalesce(cl, -1)) = max(coalesce(cl, -1)) AS uniform
      FROM ch GROUP BY org, day
  ), fit AS (
    SELECT g.*, uniform AND a <= 2147483647 AND r <= 2147483647 AND i <= 2147483647 AND c <= 2147483647
                AND (wl IS NULL OR a + r <= wl) AND (il IS NULL OR i <= il) AND (cl IS NULL OR c <= cl) AS fits
      FROM g
  ), up AS (
    INSERT INTO usage_counters AS u (org_id, day, asks, retrieves, imports, captures, plan, wallet_limit, imports_limit, captures_limit)
    SELECT org, day,
           CASE WHEN fits THEN a::integer ELSE 0 END, CASE WHEN fits THEN r::integer ELSE 0 END,
           CASE WHEN fits THEN i::integer ELSE 0 END, CASE WHEN fits THEN c::integer ELSE 0 END,
           CASE WHEN fits THEN plan END, CASE WHEN fits THEN wl END, CASE WHEN fits THEN il END, CASE WHEN fits THEN cl END
      FROM fit ORDER BY org, day
    ON CONFLICT (org_id, day) DO UPDATE
       SET asks = u.asks + EXCLUDED.asks, retrieves = u.retrieves + EXCLUDED.retrieves,
           imports = u.imports + EXCLUDED.imports, captures = u.captures + EXCLUDED.captures,
           plan = EXCLUDED.plan, wallet_limit = EXCLUDED.wallet_limit,
           imports_limit = EXCLUDED.imports_limit, captures_limit = EXCLUDED.captures_limit
     WHERE EXCLUDED.plan IS NOT NULL
       AND u.asks::bigint + EXCLUDED.asks <= 2147483647 AND u.retrieves::bigint + EXCLUDED.retrieves <= 2147483647
       AND u.imports::bigint + EXCLUDED.imports <= 2147483647 AND u.captures::bigint + EXCLUDED.captures <= 2147483647
       AND (EXCLUDED.wallet_limit IS NULL OR u.asks::bigint + u.retrieves + EXCLUDED.asks + EXCLUDED.retrieves <= EXCLUDED.wallet_limit)
       AND (EXCLUDED.imports_limit IS NULL OR u.imports::bigint + EXCLUDED.imports <= EXCLUDED.imports_limit)
       AND (EXCLUDED.captures_limit IS NULL OR u.captures::bigint + EXCLUDED.captures <= EXCLUDED.captures_limit)
    RETURNING u.org_id, u.day, u.asks, u.retrieves, u.imports, u.captures, u.plan IS NOT NULL AS ok
  ), att AS (
    INSERT INTO usage_attribution AS x (org_id, day, credential_kind, credential_id, user_id, asks, retrieves, imports, captures)
    SELECT ch.org, ch.day, ch.kind, ch.cred, (array_agg(ch.usr))[1], sum(ch.a), sum(ch.r), sum(ch.i), sum(ch.c)
      FROM ch JOIN up ON up.org_id = ch.org AND up.day = ch.day AND up.ok
     GROUP BY ch.org, ch.day, ch.kind, ch.cred
     ORDER BY ch.org, ch.day, ch.kind, ch.cred
    ON CONFLICT (org_id, day, credential_kind, credential_id) DO UPDATE
       SET asks = x.asks + EXCLUDED.asks, retrieves = x.retrieves + EXCLUDED.retrieves,
           imports = x.imports + EXCLUDED.imports, captures = x.captures + EXCLUDED.captures
  ), after_each AS (
    -- The counters after each charge: the group's final counters less what later charges added.
    SELECT ch.j,
           up.asks - coalesce(sum(ch.a) OVER w, 0) AS fa, up.retrieves - coalesce(sum(ch.r) OVER w, 0) AS fr,
           up.imports - coalesce(sum(ch.i) OVER w, 0) AS fi, up.captures - coalesce(sum(ch.c) OVER w, 0) AS fc
      FROM ch JOIN up ON up.org_id = ch.org AND up.day = ch.day AND up.ok
    WINDOW w AS (PARTITION BY ch.org, ch.day ORDER BY ch.j ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)
  )
  SELECT array_agg(e.j), array_agg(e.fa::integer), array_agg(e.fr::integer), array_agg(e.fi::integer), array_agg(e.fc::integer),
         (SELECT array_agg(up.org_id) FROM up WHERE NOT up.ok), (SELECT array_agg(up.day) FROM up WHERE NOT up.ok)
    INTO done, f_asks, f_retrieves, f_imports, f_captures, z_org, z_day
    FROM after_each e;

  RETURN QUERY SELECT * FROM unnest(done, f_asks, f_retrieves, f_imports, f_captures);

  FOR j IN SELECT t.j FROM unnest(p_org, p_day) WITH ORDINALITY AS t(o, d, j)
            WHERE NOT (t.j::integer = ANY (coalesce(done, '{}'))) ORDER BY t.o, t.d, t.j LOOP
    n := p_count[j];
    m := p_meter[j];
    INSERT INTO usage_counters AS c (org_id, day, asks, retrieves, imports, captures, plan, wallet_limit, imports_limit, captures_limit)
    SELECT p_org[j], p_day[j],
           CASE WHEN m = 'asks' THEN n ELSE 0 END, CASE WHEN m = 'retrieves' THEN n ELSE 0 END,
           CASE WHEN m = 'imports' THEN n ELSE 0 END, CASE WHEN m = 'captures' THEN n ELSE 0 END,
           p_plan[j], p_wallet_limit[j], p_imports_limit[j], p_captures_limit[j]
     WHERE p_limit[j] IS NULL OR n <= p_limit[j]
    ON CONFLICT (org_id, day) DO UPDATE
       SET asks = c.asks + EXCLUDED.asks, retrieves = c.retrieves + EXCLUDED.retrieves,
           imports = c.imports + EXCLUDED.imports, captures = c.captures + EXCLUDED.captures,
           plan = EXCLUDED.plan, wallet_limit = EXCLUDED.wallet_limit,
           imports_limit = EXCLUDED.imports_limit, captures_limit = EXCLUDED.captures_limit
     WHERE c.asks::bigint + EXCLUDED.asks <= 2147483647 AND c.retrieves::bigint + EXCLUDED.retrieves <= 2147483647
       AND c.imports::bigint + EXCLUDED.imports <= 2147483647 AND c.captures::bigint + EXCLUDED.captures <= 2147483647
       AND (p_limit[j] IS NULL OR
            (CASE WHEN m = 'imports' THEN c.imports::bigint WHEN m = 'captures' THEN c.captures::bigint
                  ELSE c.asks::bigint + c.retrieves END) + n <= p_limit[j])
    RETURNING c.asks, c.retrieves, c.imports, c.captures INTO r_asks, r_retrieves, r_imports, r_captures;
    IF FOUND THEN
      INSERT INTO usage_attribution AS a (org_id, day, credential_kind, credential_id, user_id, asks, retrieves, imports, captures)
      VALUES (p_org[j], p_day[j], p_kind[j], p_credential[j], p_user[j],
              CASE WHEN m = 'asks' THEN n ELSE 0 END, CASE WHEN m = 'retrieves' THEN n ELSE 0 END,
              CASE WHEN m = 'imports' THEN n ELSE 0 END, CASE WHEN m = 'captures' THEN n ELSE 0 END)
      ON CONFLICT (org_id, day, credential_kind, credential_id) DO UPDATE
         SET asks = a.asks + EXCLUDED.asks, retrieves = a.retrieves + EXCLUDED.retrieves,
             imports = a.imports + EXCLUDED.imports, captures = a.captures + EXCLUDED.captures;
      idx := j;
      RETURN NEXT;
    END IF;
  END LOOP;

  -- A zero row inserted only to take its lock in order, whose charges were all refused, goes:
  -- a refused charge records nothing.
  IF z_org IS NOT NULL THEN
    DELETE FROM usage_counters u USING unnest(z_org, z_day) AS z(org, day)
     WHERE u.org_id = z.org AND u.day = z.day AND u.plan IS NULL
       AND u.asks = 0 AND u.retrieves = 0 AND u.imports = 0 AND u.captures = 0;
  END IF;
END
$fn$`;
