// What a key's use writes behind the responses, batched: its last use and the scopes it used.

/**
 * Write-behind of `last_used_at` ($1 ids, $2 times), batched; never moves it more often than once a
 * minute. The rows are locked in key order first, as the credit leases lock theirs: two statements
 * that lock many key rows in different orders could deadlock.
 */
export const TOUCH_LAST_USED_SQL = `
  WITH due AS (
    SELECT k.id, v.at FROM api_keys k JOIN unnest($1::uuid[], $2::timestamptz[]) AS v(id, at) ON v.id = k.id
     WHERE k.last_used_at IS NULL OR k.last_used_at <= v.at - interval '1 minute'
     ORDER BY k.id
       FOR UPDATE OF k)
  UPDATE api_keys k SET last_used_at = due.at FROM due WHERE k.id = due.id`;

/**
 * ScopeUsageRecorder's batch ($1 key ids, $2 scopes, $3 days, $4 counts, $5 last uses, sorted by
 * key, scope and day): added to each (key, scope, day) row; keys deleted since are skipped.
 */
export const RECORD_SCOPE_USE_SQL = `
  INSERT INTO api_key_scope_usage AS u (key_id, scope, day, requests, last_used_at)
  SELECT v.key_id, v.scope, v.day, v.requests, v.at
    FROM unnest($1::uuid[], $2::text[], $3::date[], $4::bigint[], $5::timestamptz[]) WITH ORDINALITY AS v(key_id, scope, day, requests, at, n)
    JOIN api_keys k ON k.id = v.key_id
   ORDER BY v.n
  ON CONFLICT (key_id, scope, day) DO UPDATE
     SET requests = u.requests + EXCLUDED.requests, last_used_at = GREATEST(u.last_used_at, EXCLUDED.last_used_at)`;
