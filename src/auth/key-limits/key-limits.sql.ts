/*
 * The statements of per-key enforcement. Each is one round trip that an instance makes per
 * block of allowance, never per request (docs/key-controls.md, "Across replicas").
 */

/**
 * Leases up to $5 tokens from a key's window bucket ($1 key, $2 window name): the bucket holds at
 * most $3 tokens and gains $4 per millisecond; $6 is now; nothing is granted when fewer than $7
 * (the request's cost) are there. Returns the grant and what is left (to say when the next token comes).
 */
const AVAILABLE = `LEAST($3::float8, w.tokens + GREATEST(0, extract(epoch FROM ($6::timestamptz - w.at)) * 1000) * $4::float8)`;
// A quarter of what the bucket holds (at least the cost, at most $5): the other instances find some left.
const grant = (available: string) =>
  `CASE WHEN ${available} >= $7::int THEN LEAST(floor(${available}), $5::int, GREATEST($7::int, ceil(${available} / 4))) ELSE 0 END`;
export const LEASE_WINDOW_SQL = `
  INSERT INTO key_rate_windows AS w (key_id, name, tokens, at, last_grant)
  VALUES ($1::uuid, $2::text, $3::float8 - ${grant('$3::float8')}, $6::timestamptz, ${grant('$3::float8')})
  ON CONFLICT (key_id, name) DO UPDATE SET
    tokens = ${AVAILABLE} - ${grant(AVAILABLE)},
    at = GREATEST(w.at, $6::timestamptz),
    last_grant = ${grant(AVAILABLE)}
  RETURNING w.last_grant AS granted, w.tokens AS left`;

/**
 * Leases credits from a key ($1): its balance first refilled when the key refills and the period
 * ($3, the current refill period's start, or null) is newer than the balance's; then a block of
 * at least the cost $2 and about an eighth of the balance (at most $4) is taken, or nothing when
 * the balance is below the cost. Never below zero: the row lock orders concurrent leases.
 */
export const LEASE_CREDITS_SQL = `
  WITH cur AS (
    SELECT id, credits_epoch AS epoch,
           CASE WHEN credits_refill IS NOT NULL AND $3::timestamptz IS NOT NULL AND (credits_period IS NULL OR credits_period < $3::timestamptz)
                THEN (credits_refill->>'amount')::bigint ELSE credits_remaining END AS balance,
           CASE WHEN credits_refill IS NOT NULL AND $3::timestamptz IS NOT NULL AND (credits_period IS NULL OR credits_period < $3::timestamptz)
                THEN $3::timestamptz ELSE credits_period END AS period
      FROM api_keys WHERE id = $1::uuid AND credits_remaining IS NOT NULL
       FOR UPDATE),
  g AS (
    SELECT id, epoch, balance, period,
           CASE WHEN balance >= $2::bigint THEN LEAST(balance, GREATEST($2::bigint, LEAST($4::bigint, ceil(balance / 8.0)::bigint))) ELSE 0 END AS granted
      FROM cur)
  UPDATE api_keys k SET credits_remaining = g.balance - g.granted, credits_period = g.period
    FROM g WHERE k.id = g.id
  RETURNING g.granted::int8 AS granted, g.epoch, g.period, (g.balance - g.granted)::int8 AS left`;

/** Gives back credits leased and not spent ($2), only to the same setting ($3 epoch) and refill period ($4). */
export const RETURN_CREDITS_SQL = `
  UPDATE api_keys SET credits_remaining = credits_remaining + $2::bigint
   WHERE id = $1::uuid AND credits_remaining IS NOT NULL AND credits_epoch = $3::int AND credits_period IS NOT DISTINCT FROM $4::timestamptz`;
