import { VERIFICATION_OUTCOMES } from '../auth/verification-outcome-recorder.js';

/*
 * Verification outcomes per key: one row per key and UTC hour (api_key_verification_hours, kept
 * 90 days) and one per key and UTC day (api_key_verification_days, kept as long as usage history),
 * one column per outcome. Both are written by the same statement, so a day always holds the sum of
 * its hours while they are kept, and a daily answer never needs a roll-up job.
 */

/** The outcome columns, in VERIFICATION_OUTCOMES order (the order of the counts in memory). */
const COLUMNS = [...VERIFICATION_OUTCOMES];
const list = (f: (c: string, i: number) => string, sep = ', ') => COLUMNS.map(f).join(sep);
const added = list((c) => `${c} = t.${c} + EXCLUDED.${c}`);

/**
 * VerificationOutcomeRecorder's batch, in one statement: $1 key ids, $2 hour starts, then one
 * bigint[] of counts per outcome ($3…$12), sorted by key and hour. Added to each (key, hour) row
 * and to each (key, UTC day) row; keys deleted since are skipped. Rows are locked in key order,
 * days then hours, the same in every instance, so two instances' batches never deadlock.
 */
export const RECORD_OUTCOMES_SQL = `
  WITH v AS (
    SELECT v.n, v.key_id, k.org_id, v.hour, (v.hour AT TIME ZONE 'UTC')::date AS day, ${list((c) => `v.${c}`)}
      FROM unnest($1::uuid[], $2::timestamptz[], ${list((_, i) => `$${i + 3}::bigint[]`)})
           WITH ORDINALITY AS v(key_id, hour, ${list((c) => c)}, n)
      JOIN api_keys k ON k.id = v.key_id
  ), hours AS (
    INSERT INTO api_key_verification_hours AS t (key_id, org_id, hour, ${list((c) => c)})
    SELECT key_id, org_id, hour, ${list((c) => c)} FROM v ORDER BY n
    ON CONFLICT (key_id, hour) DO UPDATE SET ${added}
  )
  INSERT INTO api_key_verification_days AS t (key_id, org_id, day, ${list((c) => c)})
  SELECT key_id, org_id, day, ${list((c) => `sum(${c})`)} FROM v GROUP BY key_id, org_id, day ORDER BY key_id, day
  ON CONFLICT (key_id, day) DO UPDATE SET ${added}`;

const SUMS = list((c) => `sum(${c})::float8 AS ${c}`);

export type OutcomeGranularity = 'hour' | 'day';
export type OutcomeSubject = 'key_id' | 'org_id';

/**
 * Buckets of one key ($1, `key_id`) or all the keys of one org ($1, `org_id`) from $2 up to $3
 * (both UTC days, inclusive), oldest first; a bucket with no row is not returned. `start` is the
 * hour's or the UTC day's first instant.
 */
export function outcomeBucketsSql(granularity: OutcomeGranularity, subject: OutcomeSubject): string {
  const [table, start, range] =
    granularity === 'hour'
      ? [
          'api_key_verification_hours',
          'hour',
          `hour >= ($2::date::timestamp AT TIME ZONE 'UTC') AND hour < (($3::date + 1)::timestamp AT TIME ZONE 'UTC')`,
        ]
      : ['api_key_verification_days', `(day::timestamp AT TIME ZONE 'UTC')`, 'day BETWEEN $2::date AND $3::date'];
  return `SELECT ${start} AS start, ${SUMS}
    FROM ${table} WHERE ${subject} = $1::uuid AND ${range}
   GROUP BY 1 ORDER BY 1`;
}

/** At most $2 hourly rows older than $1 (an instant); a short statement, repeated by the retention job. */
export const PRUNE_OUTCOME_HOURS_SQL = `DELETE FROM api_key_verification_hours WHERE (key_id, hour) IN
  (SELECT key_id, hour FROM api_key_verification_hours WHERE hour < $1::timestamptz LIMIT $2)`;

/** At most $2 daily rows older than $1 (a UTC day). */
export const PRUNE_OUTCOME_DAYS_SQL = `DELETE FROM api_key_verification_days WHERE (key_id, day) IN
  (SELECT key_id, day FROM api_key_verification_days WHERE day < $1::date LIMIT $2)`;
