import type { MigrationInterface, QueryRunner } from 'typeorm';
import { useDataSourceSchema } from '../migration-schema.js';

/**
 * Org meters on instance leases (USAGE_CHARGING=leased, docs/usage.md "Leased and exact
 * charging"): `usage_leases` holds, per org, UTC day, limit and instance, the part of the day's
 * limit the instance leased and has neither counted nor given back (`held`), until `expires_at`
 * (database time). `kui_lease_meters` grants blocks so that the counted use plus every live
 * block never passes the limit; `kui_count_meters` writes an instance's counts and moves them
 * out of its block in one transaction. A lapsed block (its instance died) counts for nothing:
 * its capacity comes back when it lapses, and the retention job deletes the row.
 */
export class MeterLeases1766000000050 implements MigrationInterface {
  name = 'MeterLeases1766000000050';

  async up(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    // `meter` is the name of the limit: wallet (asks and retrieves), imports, captures, or a deployment meter.
    await q.query(`
      CREATE TABLE usage_leases (
        org_id uuid NOT NULL,
        day date NOT NULL,
        meter text NOT NULL,
        holder uuid NOT NULL,
        held integer NOT NULL DEFAULT 0 CHECK (held >= 0),
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (org_id, day, meter, holder)
      )`);
    await q.query(LEASE_METERS_FUNCTION);
    await q.query(COUNT_METERS_FUNCTION);
  }

  async down(q: QueryRunner): Promise<void> {
    await useDataSourceSchema(q);
    await q.query(`DROP FUNCTION kui_count_meters`);
    await q.query(`DROP FUNCTION kui_lease_meters`);
    await q.query(`DROP TABLE usage_leases`);
  }
}

/** The counted use of one limit on one day: the wallet is asks plus retrieves. */
const COUNTED = (org: string, day: string, meter: string) => `
  CASE ${meter}
    WHEN 'wallet' THEN (SELECT c.asks::bigint + c.retrieves FROM usage_counters c WHERE c.org_id = ${org} AND c.day = ${day})
    WHEN 'imports' THEN (SELECT c.imports::bigint FROM usage_counters c WHERE c.org_id = ${org} AND c.day = ${day})
    WHEN 'captures' THEN (SELECT c.captures::bigint FROM usage_counters c WHERE c.org_id = ${org} AND c.day = ${day})
    ELSE (SELECT m.used::bigint FROM usage_meter_counters m WHERE m.org_id = ${org} AND m.day = ${day} AND m.meter = ${meter})
  END`;

/**
 * Leases blocks for a batch of asks (one row each of the arrays): $limit null is unlimited (the
 * column's bound). Each ask is decided under a transaction-level advisory lock of its (org, day,
 * limit), taken in that order (two batches never wait on each other in a cycle), and then reads
 * the counted use and every live block in one snapshot: a count moves units from a block to the
 * counter in one transaction, so their sum is never seen half-moved. The grant is at least the
 * cost, what the instance's waiting requests need together, and about an eighth of what is left
 * (at most p_max_block), never more than what is left, or nothing when less than the cost is left.
 * A cost of 0 grants nothing and only renews the instance's live block. Every ask that leaves the
 * instance a live block sets its expiry to now + p_ttl_ms. Returns per ask: what it granted,
 * whether the instance holds a live block now, and the counted use and all live blocks after it.
 */
const LEASE_METERS_FUNCTION = `
CREATE FUNCTION kui_lease_meters(
  p_org uuid[], p_day date[], p_meter text[], p_limit integer[], p_cost integer[], p_want integer[],
  p_max_block integer, p_holder uuid, p_ttl_ms integer)
RETURNS TABLE (idx integer, r_granted integer, r_live boolean, r_counted bigint, r_held bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
  j integer;
  v_counted bigint;
  v_held bigint;
  v_avail bigint;
  v_grant integer;
  v_live boolean;
BEGIN
  FOR j IN SELECT t.j FROM unnest(p_org, p_day, p_meter) WITH ORDINALITY AS t(o, d, m, j) ORDER BY t.o, t.d, t.m, t.j LOOP
    PERFORM pg_advisory_xact_lock(hashtextextended('kui.usage_lease:' || p_org[j]::text || ':' || p_day[j]::text || ':' || p_meter[j], 0));
    SELECT coalesce((${COUNTED('p_org[j]', 'p_day[j]', 'p_meter[j]')}), 0),
           coalesce((SELECT sum(x.held) FROM usage_leases x
                      WHERE x.org_id = p_org[j] AND x.day = p_day[j] AND x.meter = p_meter[j] AND x.expires_at > clock_timestamp()), 0)
      INTO v_counted, v_held;
    v_avail := coalesce(p_limit[j], 2147483647)::bigint - v_counted - v_held;
    v_grant := CASE WHEN p_cost[j] < 1 OR v_avail < p_cost[j] THEN 0
                    ELSE LEAST(v_avail, GREATEST(p_cost[j], p_want[j], LEAST(p_max_block, ceil(v_avail / 8.0)::bigint))) END;
    IF v_grant > 0 THEN
      INSERT INTO usage_leases AS x (org_id, day, meter, holder, held, expires_at)
      VALUES (p_org[j], p_day[j], p_meter[j], p_holder, v_grant, clock_timestamp() + p_ttl_ms * interval '1 millisecond')
      ON CONFLICT (org_id, day, meter, holder) DO UPDATE
         SET held = CASE WHEN x.expires_at > clock_timestamp() THEN x.held ELSE 0 END + EXCLUDED.held,
             expires_at = EXCLUDED.expires_at;
      v_live := true;
    ELSE
      UPDATE usage_leases x SET expires_at = clock_timestamp() + p_ttl_ms * interval '1 millisecond'
       WHERE x.org_id = p_org[j] AND x.day = p_day[j] AND x.meter = p_meter[j] AND x.holder = p_holder
         AND x.expires_at > clock_timestamp();
      v_live := FOUND;
    END IF;
    idx := j;
    r_granted := v_grant;
    r_live := v_live;
    r_counted := v_counted;
    r_held := v_held + v_grant;
    RETURN NEXT;
  END LOOP;
END
$fn$`;

/**
 * Writes a batch of an instance's counts (one row each of the arrays: an org, day, meter and
 * credential and how many units) in one transaction: the contract's meters on the day's row and
 * the credential's split (with the plan and limits of the batch's last row of that org and day, as
 * the exact charge records them), a deployment's meters on their rows, and the same units out of
 * the instance's live blocks. Rows are locked in key order, as kui_charge_batch locks them.
 * Returns the counted use after it of every limit the batch counted (for usage.threshold).
 */
const CONTRACT = `('asks', 'retrieves', 'imports', 'captures')`;
const LIMIT_NAME = (m: string) => `CASE WHEN ${m} IN ('asks', 'retrieves') THEN 'wallet' ELSE ${m} END`;
const COUNT_METERS_FUNCTION = `
CREATE FUNCTION kui_count_meters(
  p_org uuid[], p_day date[], p_meter text[], p_count integer[], p_kind text[], p_credential uuid[], p_user uuid[],
  p_plan text[], p_wallet_limit integer[], p_imports_limit integer[], p_captures_limit integer[], p_meter_limit integer[],
  p_holder uuid, p_async boolean)
RETURNS TABLE (r_org uuid, r_day date, r_meter text, r_used bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
  k record;
BEGIN
  IF p_async THEN
    PERFORM set_config('synchronous_commit', 'off', true);
  END IF;

  INSERT INTO usage_counters AS u (org_id, day, asks, retrieves, imports, captures, plan, wallet_limit, imports_limit, captures_limit)
  SELECT t.org, t.day,
         coalesce(sum(t.n) FILTER (WHERE t.meter = 'asks'), 0), coalesce(sum(t.n) FILTER (WHERE t.meter = 'retrieves'), 0),
         coalesce(sum(t.n) FILTER (WHERE t.meter = 'imports'), 0), coalesce(sum(t.n) FILTER (WHERE t.meter = 'captures'), 0),
         (array_agg(t.plan ORDER BY t.j DESC))[1], (array_agg(t.wl ORDER BY t.j DESC))[1],
         (array_agg(t.il ORDER BY t.j DESC))[1], (array_agg(t.cl ORDER BY t.j DESC))[1]
    FROM unnest(p_org, p_day, p_meter, p_count, p_plan, p_wallet_limit, p_imports_limit, p_captures_limit)
         WITH ORDINALITY AS t(org, day, meter, n, plan, wl, il, cl, j)
   WHERE t.meter IN ${CONTRACT}
   GROUP BY t.org, t.day ORDER BY t.org, t.day
  ON CONFLICT (org_id, day) DO UPDATE
     SET asks = u.asks + EXCLUDED.asks, retrieves = u.retrieves + EXCLUDED.retrieves,
         imports = u.imports + EXCLUDED.imports, captures = u.captures + EXCLUDED.captures,
         plan = EXCLUDED.plan, wallet_limit = EXCLUDED.wallet_limit,
         imports_limit = EXCLUDED.imports_limit, captures_limit = EXCLUDED.captures_limit;

  INSERT INTO usage_attribution AS x (org_id, day, credential_kind, credential_id, user_id, asks, retrieves, imports, captures)
  SELECT t.org, t.day, t.kind, t.cred, (array_agg(t.usr))[1],
         coalesce(sum(t.n) FILTER (WHERE t.meter = 'asks'), 0), coalesce(sum(t.n) FILTER (WHERE t.meter = 'retrieves'), 0),
         coalesce(sum(t.n) FILTER (WHERE t.meter = 'imports'), 0), coalesce(sum(t.n) FILTER (WHERE t.meter = 'captures'), 0)
    FROM unnest(p_org, p_day, p_meter, p_count, p_kind, p_credential, p_user) AS t(org, day, meter, n, kind, cred, usr)
   WHERE t.meter IN ${CONTRACT}
   GROUP BY t.org, t.day, t.kind, t.cred ORDER BY t.org, t.day, t.kind, t.cred
  ON CONFLICT (org_id, day, credential_kind, credential_id) DO UPDATE
     SET asks = x.asks + EXCLUDED.asks, retrieves = x.retrieves + EXCLUDED.retrieves,
         imports = x.imports + EXCLUDED.imports, captures = x.captures + EXCLUDED.captures;

  INSERT INTO usage_meter_counters AS u (org_id, day, meter, used, plan, meter_limit)
  SELECT t.org, t.day, t.meter, sum(t.n), (array_agg(t.plan ORDER BY t.j DESC))[1], (array_agg(t.ml ORDER BY t.j DESC))[1]
    FROM unnest(p_org, p_day, p_meter, p_count, p_plan, p_meter_limit) WITH ORDINALITY AS t(org, day, meter, n, plan, ml, j)
   WHERE t.meter NOT IN ${CONTRACT}
   GROUP BY t.org, t.day, t.meter ORDER BY t.org, t.day, t.meter
  ON CONFLICT (org_id, day, meter) DO UPDATE
     SET used = u.used + EXCLUDED.used, plan = EXCLUDED.plan, meter_limit = EXCLUDED.meter_limit;

  INSERT INTO usage_meter_attribution AS x (org_id, day, credential_kind, credential_id, meter, user_id, used)
  SELECT t.org, t.day, t.kind, t.cred, t.meter, (array_agg(t.usr))[1], sum(t.n)
    FROM unnest(p_org, p_day, p_meter, p_count, p_kind, p_credential, p_user) AS t(org, day, meter, n, kind, cred, usr)
   WHERE t.meter NOT IN ${CONTRACT}
   GROUP BY t.org, t.day, t.kind, t.cred, t.meter ORDER BY t.org, t.day, t.kind, t.cred, t.meter
  ON CONFLICT (org_id, day, credential_kind, credential_id, meter) DO UPDATE SET used = x.used + EXCLUDED.used;

  -- What was counted leaves the instance's live blocks (in key order, as kui_lease_meters takes them).
  FOR k IN SELECT t.org, t.day, ${LIMIT_NAME('t.meter')} AS m, sum(t.n) AS n
             FROM unnest(p_org, p_day, p_meter, p_count) AS t(org, day, meter, n)
            GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 LOOP
    UPDATE usage_leases x SET held = GREATEST(x.held - k.n, 0)
     WHERE x.org_id = k.org AND x.day = k.day AND x.meter = k.m AND x.holder = p_holder AND x.expires_at > clock_timestamp();
  END LOOP;

  RETURN QUERY
    SELECT k2.org, k2.day, k2.m, coalesce((${COUNTED('k2.org', 'k2.day', 'k2.m')}), 0)
      FROM (SELECT DISTINCT t.org, t.day, ${LIMIT_NAME('t.meter')} AS m FROM unnest(p_org, p_day, p_meter) AS t(org, day, meter)) k2;
END
$fn$`;
