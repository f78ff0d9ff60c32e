/** The channel the triggers of migration 1764500000000 notify on. */
export const INVALIDATION_CHANNEL = 'kui_verification';
/** Each acknowledgement is announced here (payload: the sequence acknowledged), so writers wait on events, not a poll. */
export const ACK_CHANNEL = 'kui_verification_ack';

/** What one committed change may have made stale; null fields match nothing. */
export interface InvalidationTargets {
  keyId: string | null;
  userId: string | null;
  orgId: string | null;
}

/**
 * A notification of INVALIDATION_CHANNEL: its sequence number and what it names; targets null
 * means "drop everything" (a TRUNCATE, `a`, or a payload that cannot be read: never guess).
 */
export function parseInvalidation(payload: string | undefined): { seq: number; targets: InvalidationTargets | null } {
  try {
    const m = JSON.parse(payload ?? '') as {
      s: number;
      a?: boolean;
      k?: string | null;
      u?: string | null;
      o?: string | null;
    };
    return {
      seq: Number(m.s) || 0,
      targets: m.a ? null : { keyId: m.k ?? null, userId: m.u ?? null, orgId: m.o ?? null },
    };
  } catch {
    return { seq: 0, targets: null };
  }
}

/** The lease statements, run on the lease's own LISTEN connection ($1 instance id, $2 lease ms). */
export const LEASE_SQL = {
  /** A fresh lease starts with an empty cache, so it has applied every invalidation committed so far. */
  acquire: `
    WITH pruned AS (DELETE FROM cache_leases WHERE expires_at < now() - interval '1 hour')
    INSERT INTO cache_leases (instance_id, expires_at, acked_seq)
    SELECT $1, now() + $2 * interval '1 millisecond', seq FROM verification_invalidations
    ON CONFLICT (instance_id) DO UPDATE
      SET expires_at = EXCLUDED.expires_at, acked_seq = GREATEST(cache_leases.acked_seq, EXCLUDED.acked_seq)
    RETURNING acked_seq::text AS seq`,
  /**
   * Extends an unexpired lease (once expired, writers may have stopped waiting for it) only if
   * the instance has acknowledged $3: the sequence the previous renewal read. Every change
   * committed before that renewal has then had a whole renewal interval to be notified, applied
   * and acknowledged; one still missing means notifications no longer arrive (a pooler in
   * transaction mode, a proxy dropping idle server-to-client traffic), and the lease must lapse.
   * A notification still in flight at renewal time does not count against it. Returns the
   * sequence to require next time, whether the lease was extended, and whether it was caught up
   * (null: no live lease).
   */
  renew: `
    WITH l AS (SELECT acked_seq >= $3::bigint AS caught_up FROM cache_leases WHERE instance_id = $1 AND expires_at > now()),
         u AS (UPDATE cache_leases SET expires_at = now() + $2 * interval '1 millisecond'
                WHERE instance_id = $1 AND expires_at > now() AND acked_seq >= $3::bigint RETURNING 1)
    SELECT (SELECT seq FROM verification_invalidations)::text AS seq, EXISTS (SELECT 1 FROM u) AS renewed, (SELECT caught_up FROM l) AS caught_up`,
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
