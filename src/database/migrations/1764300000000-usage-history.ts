import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Usage history (issue 16): each day's counter row also records the plan and limits the day was
 * charged under; `usage_attribution` splits the same totals by the credential that charged them;
 * `kui_charge_batch` charges a whole turn's batch in one statement and one commit.
 */
export class UsageHistory1764300000000 implements MigrationInterface {
  name = 'UsageHistory1764300000000';

  async up(q: QueryRunner): Promise<void> {
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
    await q.query(`DROP FUNCTION kui_charge_batch`);
    await q.query(`DROP TABLE usage_attribution`);
    await q.query(`DROP INDEX usage_counters_day_idx`);
    await q.query(`ALTER TABLE usage_counters DROP COLUMN plan, DROP COLUMN wallet_limit, DROP COLUMN imports_limit, DROP COLUMN captures_limit`);
  }
}

/**
 * Charges a batch in one call: every charge is decided alone, all or nothing, by the same
 * upsert as before (ON CONFLICT DO UPDATE locks the org's row and re-checks the limit against
 * its latest committed version), and a charge that passes also adds to its credential's row.
 * Rows are locked org by org in (org, day) order, so batches from several processes cannot
 * deadlock; within an org the charges are decided in arrival order. The locks are held until
 * the single commit at the end, once per batch rather than once per charge.
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
BEGIN
  IF p_async THEN
    PERFORM set_config('synchronous_commit', 'off', true);
  END IF;
  FOR j IN SELECT t.j FROM unnest(p_org, p_day) WITH ORDINALITY AS t(o, d, j) ORDER BY t.o, t.d, t.j LOOP
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
END
$fn$`;
