/*
 * The statements of per-key enforcement. Each is one round trip that an instance makes per
 * block of allowance, never per request, for every key that asks in the same event-loop turn
 * (docs/key-controls.md, "Across replicas").
 */

/**
 * Leases window allowance for a batch of asks, one row each of the arrays: $1 key, $2 window name,
 * $3 the limit, $4 the window's length in seconds, $5 the most to grant, $6 now, $7 the request's
 * cost (nothing is granted when less is available). Each row is a sliding-window counter: the
 * fixed window now counting (aligned to multiples of its length since the epoch), what was leased
 * in it and in the window before; what is available is the limit less the previous window's count
 * weighted by how much of it the sliding window still covers, less the current count. One (key,
 * window) at most once per batch, taken in key order (two instances' batches never lock rows in
 * opposite orders). Returns, per ask, the grant and the counts after it (to say when more is due).
 */
const ASKS = `SELECT a.*, date_bin(make_interval(secs => a.secs), a.now, 'epoch') AS start
                FROM unnest($1::uuid[], $2::text[], $3::int[], $4::int[], $5::int[], $6::timestamptz[], $7::int[])
                  AS a(key_id, name, lim, secs, want, now, cost)`;
// The row as of the ask's window: a later window moves the count to `previous` (or drops it, after
// a gap); an ask from an older window than the row's (a late instance) counts in the row's window.
// A window whose length changed (the key's setting) starts at the ask's window, counting what the
// old one still counts at the ask's instant (its previous count weighted by the overlap, and its
// current count).
const MOVED = `SELECT w.window_seconds IS NOT NULL AND w.window_seconds <> a.secs AS moved,
                      extract(epoch FROM a.now - w.window_start) / w.window_seconds AS e`;
const CARRIED = `ceil(CASE WHEN x.e < 1 THEN w.previous_count * (1 - GREATEST(0, x.e)) + w.current_count
                            WHEN x.e < 2 THEN w.current_count * (2 - x.e) ELSE 0 END)::int`;
const ROLLED = `SELECT CASE WHEN x.moved THEN a.start ELSE GREATEST(w.window_start, a.start) END AS start,
         CASE WHEN x.moved THEN 0 WHEN a.start <= w.window_start THEN w.previous_count
              WHEN a.start - w.window_start <= make_interval(secs => a.secs) THEN w.current_count ELSE 0 END AS previous,
         CASE WHEN x.moved THEN ${CARRIED} WHEN a.start <= w.window_start THEN w.current_count ELSE 0 END AS current
    FROM (${MOVED}) x`;
const AVAILABLE = `a.lim - r.previous * (1 - LEAST(1, GREATEST(0, extract(epoch FROM a.now - r.start) / a.secs))) - r.current`;
// A quarter of what is available (at least the cost, at most the ask): the other instances find some left.
const GRANT = `SELECT CASE WHEN v.available >= a.cost
                   THEN LEAST(floor(v.available), a.want, GREATEST(a.cost, ceil(v.available / 4)))::int ELSE 0 END AS granted
                 FROM (SELECT ${AVAILABLE} AS available) v`;
export const LEASE_WINDOWS_SQL = `
  WITH a AS (${ASKS})
  INSERT INTO key_rate_windows AS w (key_id, name, window_start, previous_count, current_count, last_grant, window_seconds)
  SELECT a.key_id, a.name, a.start, 0, g.granted, g.granted, a.secs
    FROM a, LATERAL (SELECT a.start, 0 AS previous, 0 AS current) r, LATERAL (${GRANT}) g
   ORDER BY a.key_id, a.name
  ON CONFLICT (key_id, name) DO UPDATE SET (window_start, previous_count, current_count, last_grant, window_seconds) = (
    SELECT r.start, r.previous, r.current + g.granted, g.granted, a.secs
      FROM a, LATERAL (${ROLLED}) r, LATERAL (${GRANT}) g
     WHERE a.key_id = w.key_id AND a.name = w.name)
  RETURNING w.key_id, w.name, w.last_grant AS granted, w.window_start, w.previous_count AS previous, w.current_count AS current`;

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

/**
 * Gives back window allowance an instance leased and did not spend ($3), when it drops its lease
 * (the key's setting changed): taken off the count of the fixed window it was leased in ($4, of
 * $5 seconds), or off the previous count if the row has since moved on to the next window. Never
 * below zero, and nothing for an older window: what was spent stays counted.
 */
export const RETURN_WINDOW_SQL = `
  UPDATE key_rate_windows
     SET current_count = CASE WHEN window_start = $4::timestamptz THEN current_count - LEAST(current_count, $3::int) ELSE current_count END,
         previous_count = CASE WHEN window_start = $4::timestamptz THEN previous_count ELSE previous_count - LEAST(previous_count, $3::int) END
   WHERE key_id = $1::uuid AND name = $2::text
     AND window_start IN ($4::timestamptz, $4::timestamptz + make_interval(secs => $5::int))`;

/** Gives back credits leased and not spent ($2), only to the same setting ($3 epoch) and refill period ($4). */
export const RETURN_CREDITS_SQL = `
  UPDATE api_keys SET credits_remaining = credits_remaining + $2::bigint
   WHERE id = $1::uuid AND credits_remaining IS NOT NULL AND credits_epoch = $3::int AND credits_period IS NOT DISTINCT FROM $4::timestamptz`;
