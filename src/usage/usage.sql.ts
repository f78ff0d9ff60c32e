import { METERS, type Meter } from '../common/meters.js';

/*
 * The usage feature's statements. The contract's four meters are columns of the org's day
 * (usage_counters, split by credential in usage_attribution); a meter the deployment defines is a
 * row per org, day and meter (usage_meter_counters, split in usage_meter_attribution).
 */

// Gives back a charge whose work failed, on the day it was made and never below zero, from the
// org's counter and from the credential's row together (one statement, counter row first).
export const REFUND_SQL = Object.fromEntries(
  METERS.map((m) => [
    m,
    `WITH c AS (
       UPDATE usage_counters SET ${m} = GREATEST(${m} - $3::int, 0) WHERE org_id = $1::uuid AND day = $2::date RETURNING 1
     )
     UPDATE usage_attribution SET ${m} = GREATEST(${m} - $3::int, 0)
      WHERE org_id = $1::uuid AND day = $2::date AND credential_kind = $4 AND credential_id = $5::uuid
        AND EXISTS (SELECT 1 FROM c)`,
  ]),
) as Record<Meter, string>;

/** The same for a deployment's meter (the meter is a parameter: one statement for every name). */
export const METER_REFUND_SQL = `
  WITH c AS (
    UPDATE usage_meter_counters SET used = GREATEST(used - $3::int, 0)
     WHERE org_id = $1::uuid AND day = $2::date AND meter = $6 RETURNING 1
  )
  UPDATE usage_meter_attribution SET used = GREATEST(used - $3::int, 0)
   WHERE org_id = $1::uuid AND day = $2::date AND meter = $6 AND credential_kind = $4 AND credential_id = $5::uuid
     AND EXISTS (SELECT 1 FROM c)`;

export const CHARGE_BATCH_SQL =
  'SELECT idx, r_asks, r_retrieves, r_imports, r_captures FROM kui_charge_batch($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)';

export const CHARGE_METER_BATCH_SQL =
  'SELECT idx, r_used, r_asks, r_retrieves, r_imports, r_captures FROM kui_charge_meter_batch($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)';

export const READ_USAGE_SQL = `
  SELECT c.org_id, to_char(c.day, 'YYYY-MM-DD') AS day, c.asks, c.retrieves, c.imports, c.captures
    FROM usage_counters c
    JOIN unnest($1::uuid[], $2::date[]) AS k(org_id, day) ON c.org_id = k.org_id AND c.day = k.day`;

export const READ_METERS_SQL = `
  SELECT m.org_id, to_char(m.day, 'YYYY-MM-DD') AS day, m.meter, m.used
    FROM usage_meter_counters m
    JOIN unnest($1::uuid[], $2::date[]) AS k(org_id, day) ON m.org_id = k.org_id AND m.day = k.day`;

const DAY_COLUMNS = `to_char(d.day, 'YYYY-MM-DD') AS day`;
const COUNTER_COLUMNS = (t: string) =>
  `COALESCE(${t}.asks, 0) AS asks, COALESCE(${t}.retrieves, 0) AS retrieves, COALESCE(${t}.imports, 0) AS imports, COALESCE(${t}.captures, 0) AS captures`;
const LIMIT_COLUMNS = `c.plan, c.wallet_limit, c.imports_limit, c.captures_limit, m.meters, m.plan AS meter_plan`;
const DAYS = `generate_series($2::date, $3::date, interval '1 day') AS d(day)`;
/** The deployment meters charged on a day: `{ name: { used, limit } }` with the limit recorded with them, and a plan they were charged under. */
const METERS_OF_DAY = (used: string, join = '') => `
  LEFT JOIN LATERAL (
    SELECT jsonb_object_agg(x.meter, jsonb_build_object('used', ${used}, 'limit', x.meter_limit)) AS meters, max(x.plan) AS plan
      FROM usage_meter_counters x ${join}
     WHERE x.org_id = $1::uuid AND x.day = d.day::date AND x.plan IS NOT NULL
  ) m ON true`;

export const ORG_DAILY_SQL = `
  SELECT ${DAY_COLUMNS}, ${COUNTER_COLUMNS('c')}, ${LIMIT_COLUMNS}
    FROM ${DAYS}
    LEFT JOIN usage_counters c ON c.org_id = $1::uuid AND c.day = d.day::date
    ${METERS_OF_DAY('x.used')}
   WHERE d.day > COALESCE($4::date, '-infinity'::date)
   ORDER BY d.day
   LIMIT $5`;

export const CREDENTIAL_DAILY_SQL = `
  SELECT ${DAY_COLUMNS}, ${COUNTER_COLUMNS('a')}, ${LIMIT_COLUMNS}
    FROM ${DAYS}
    LEFT JOIN usage_attribution a ON a.org_id = $1::uuid AND a.day = d.day::date AND a.credential_kind = $4 AND a.credential_id = $5::uuid
    LEFT JOIN usage_counters c ON c.org_id = $1::uuid AND c.day = d.day::date
    ${METERS_OF_DAY(
      'COALESCE(y.used, 0)',
      `LEFT JOIN usage_meter_attribution y ON y.org_id = x.org_id AND y.day = x.day AND y.credential_kind = $4
                                          AND y.credential_id = $5::uuid AND y.meter = x.meter`,
    )}
   ORDER BY d.day`;

/**
 * One page of an org's split by credential: the (day, kind, credential) rows of either table (a
 * credential may have charged only deployment meters on a day), both read in that key order.
 */
export const ATTRIBUTION_PAGE_SQL = `
  WITH k AS (
    (SELECT a.day, a.credential_kind, a.credential_id FROM usage_attribution a
      WHERE a.org_id = $1::uuid AND a.day BETWEEN $2::date AND $3::date
        AND ($4::date IS NULL OR (a.day, a.credential_kind, a.credential_id) > ($4::date, $5::text, $6::uuid)))
    UNION
    (SELECT y.day, y.credential_kind, y.credential_id FROM usage_meter_attribution y
      WHERE y.org_id = $1::uuid AND y.day BETWEEN $2::date AND $3::date
        AND ($4::date IS NULL OR (y.day, y.credential_kind, y.credential_id) > ($4::date, $5::text, $6::uuid)))
    ORDER BY 1, 2, 3
    LIMIT $7
  )
  SELECT to_char(k.day, 'YYYY-MM-DD') AS day, k.credential_kind, k.credential_id, COALESCE(a.user_id, m.user_id) AS user_id,
         ${COUNTER_COLUMNS('a')}, m.meters
    FROM k
    LEFT JOIN usage_attribution a ON a.org_id = $1::uuid AND a.day = k.day AND a.credential_kind = k.credential_kind
                                 AND a.credential_id = k.credential_id
    LEFT JOIN LATERAL (
      SELECT jsonb_object_agg(y.meter, y.used) AS meters, (array_agg(y.user_id))[1] AS user_id
        FROM usage_meter_attribution y
       WHERE y.org_id = $1::uuid AND y.day = k.day AND y.credential_kind = k.credential_kind AND y.credential_id = k.credential_id
    ) m ON true
   ORDER BY k.day, k.credential_kind, k.credential_id`;

/** Each history table and its key, for pruning in bounded batches. */
export const HISTORY_TABLES = {
  usage_counters: 'org_id, day',
  usage_attribution: 'org_id, day, credential_kind, credential_id',
  usage_meter_counters: 'org_id, day, meter',
  usage_meter_attribution: 'org_id, day, credential_kind, credential_id, meter',
} as const;
export type HistoryTable = keyof typeof HISTORY_TABLES;
