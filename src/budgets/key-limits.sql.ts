/*
 * The statements of per-key enforcement. Each is one round trip that an instance makes per
 * block of allowance, never per request, for every key that asks in the same event-loop turn
 * (docs/key-controls.md, "Across replicas").
 */

/**
 * Leases window tokens for a batch of asks, one row each of the arrays: $1 key, $2 window name,
 * $3 the bucket's capacity, $4 tokens gained per millisecond, $5 the most to grant, $6 now, $7 the
 * request's cost (nothing is granted when fewer are there). One (key, window) at most once per
 * batch, taken in key order (two instances' batches never lock rows in opposite orders). Returns,
 * per ask, the grant and what is left (to say when the next token comes).
 */
const ASKS = `SELECT * FROM unnest($1::uuid[], $2::text[], $3::float8[], $4::float8[], $5::int[], $6::timestamptz[], $7::int[])
                  AS a(key_id, name, cap, per_ms, want, now, cost)`;
const AVAILABLE = `LEAST(a.cap, w.tokens + GREATEST(0, extract(epoch FROM (a.now - w.at)) * 1000) * a.per_ms)`;
// A quarter of what the bucket holds (at least the cost, at most the ask): the other instances find some left.
const grant = (available: string) =>
  `CASE WHEN ${available} >= a.cost THEN LEAST(floor(${available}), a.want, GREATEST(a.cost, ceil(${available} / 4))) ELSE 0 END`;
export const LEASE_WINDOWS_SQL = `
  WITH a AS (${ASKS})
  INSERT INTO key_rate_windows AS w (key_id, name, tokens, at, last_grant)
  SELECT a.key_id, a.name, a.cap - ${grant('a.cap')}, a.now, ${grant('a.cap')} FROM a ORDER BY a.key_id, a.name
  ON CONFLICT (key_id, name) DO UPDATE SET (tokens, at, last_grant) = (
    SELECT ${AVAILABLE} - ${grant(AVAILABLE)}, GREATEST(w.at, a.now), ${grant(AVAILABLE)}
      FROM a WHERE a.key_id = w.key_id AND a.name = w.name)
  RETURNING w.key_id, w.name, w.last_grant AS granted, w.tokens AS left`;

/**
 * Leases credits for a batch of keys, one row each of the arrays ($1 key, $2 the request's cost,
 * $3 the current refill period's start or null, $4 the largest block, $5 what the requests
 * waiting on this instance need together; one key at most once per batch): each balance is first
 * refilled when the key refills and the period is newer than the balance's; then a block of at
 * least the cost, what the waiting requests need and about an eighth of the balance (at most $4,
 * unless the waiting requests need more) is taken, at most the balance, or nothing when the
 * balance is below the cost. Never below zero: the row locks, taken in key order, order
 * concurrent leases. A key with no credits returns no row.
 */
export const LEASE_CREDITS_SQL = `
  WITH a AS (SELECT * FROM unnest($1::uuid[], $2::int8[], $3::timestamptz[], $4::int8[], $5::int8[]) AS a(id, cost, period, max_block, want)),
  cur AS (
    SELECT k.id, k.credits_epoch AS epoch, a.cost, a.max_block, a.want,
           CASE WHEN k.credits_refill IS NOT NULL AND a.period IS NOT NULL AND (k.credits_period IS NULL OR k.credits_period < a.period)
                THEN (k.credits_refill->>'amount')::bigint ELSE k.credits_remaining END AS balance,
           CASE WHEN k.credits_refill IS NOT NULL AND a.period IS NOT NULL AND (k.credits_period IS NULL OR k.credits_period < a.period)
                THEN a.period ELSE k.credits_period END AS period
      FROM api_keys k JOIN a ON a.id = k.id
     WHERE k.credits_remaining IS NOT NULL
     ORDER BY k.id
       FOR UPDATE OF k),
  g AS (
    SELECT id, epoch, balance, period,
           CASE WHEN balance >= cost THEN LEAST(balance, GREATEST(cost, want, LEAST(max_block, ceil(balance / 8.0)::bigint))) ELSE 0 END AS granted
      FROM cur)
  UPDATE api_keys k SET credits_remaining = g.balance - g.granted, credits_period = g.period
    FROM g WHERE k.id = g.id
  RETURNING k.id, g.granted::int8 AS granted, g.epoch, g.period, (g.balance - g.granted)::int8 AS left`;

/** Gives back credits leased and not spent ($2), only to the same setting ($3 epoch) and refill period ($4). */
export const RETURN_CREDITS_SQL = `
  UPDATE api_keys SET credits_remaining = credits_remaining + $2::bigint
   WHERE id = $1::uuid AND credits_remaining IS NOT NULL AND credits_epoch = $3::int AND credits_period IS NOT DISTINCT FROM $4::timestamptz`;
