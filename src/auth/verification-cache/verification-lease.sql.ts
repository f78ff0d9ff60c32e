/** The channel the triggers of migration 1764500000000 notify on. */
export const INVALIDATION_CHANNEL = 'kui_verification';
/** Each acknowledgement is announced here (payload: the sequence acknowledged), so writers wait on events, not a poll. */
export const ACK_CHANNEL = 'kui_verification_ack';

/** The lease statements, run on the lease's own LISTEN connection ($1 instance id, $2 lease ms). */
export const LEASE_SQL = {
  /** A fresh lease starts with an empty cache, so it has applied every invalidation committed so far. */
  acquire: `
    WITH pruned AS (DELETE FROM cache_leases WHERE expires_at < now() - interval '1 hour')
    INSERT INTO cache_leases (instance_id, expires_at, acked_seq)
    SELECT $1, now() + $2 * interval '1 millisecond', seq FROM verification_invalidations
    ON CONFLICT (instance_id) DO UPDATE
      SET expires_at = EXCLUDED.expires_at, acked_seq = GREATEST(cache_leases.acked_seq, EXCLUDED.acked_seq)`,
  /** Only an unexpired lease is extended: once expired, writers may have stopped waiting for it. */
  renew: `UPDATE cache_leases SET expires_at = now() + $2 * interval '1 millisecond' WHERE instance_id = $1 AND expires_at > now()`,
  acknowledge: `
    WITH a AS (UPDATE cache_leases SET acked_seq = GREATEST(acked_seq, $2::bigint) WHERE instance_id = $1 RETURNING acked_seq)
    SELECT pg_notify('kui_verification_ack', acked_seq::text) FROM a`,
  release: `DELETE FROM cache_leases WHERE instance_id = $1`,
};

/**
 * For a writer, after its commit: the sequence to wait for (every invalidation committed so far,
 * its own included); how many live leases *of other instances* have not applied it yet, and in
 * how many milliseconds the first of those runs out (then it no longer counts); and whether the
 * writer's own instance ($2; null: none, count every lease) is pending: the writer sees that one
 * apply it in process, without a round trip. $1: the target, or null to read it now.
 */
export const PENDING_ACKS_SQL = `
  WITH t AS (SELECT COALESCE($1::bigint, seq) AS seq FROM verification_invalidations)
  SELECT t.seq::text AS seq, p.pending, p.own_pending, p.expires_in_ms
    FROM t, LATERAL (
      SELECT count(*) FILTER (WHERE l.instance_id IS DISTINCT FROM $2::text)::int AS pending,
             coalesce(bool_or(l.instance_id = $2::text), false) AS own_pending,
             ceil(extract(epoch FROM min(l.expires_at) FILTER (WHERE l.instance_id IS DISTINCT FROM $2::text) - now()) * 1000)::int AS expires_in_ms
        FROM cache_leases l WHERE l.expires_at > now() AND l.acked_seq < t.seq) p`;
