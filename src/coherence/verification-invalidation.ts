import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import { CoherenceLease } from './coherence-lease.js';
import { PENDING_ACKS_SQL } from './coherence.sql.js';

/** Twice the longest lease any instance may be configured with (VERIFICATION_CACHE_LEASE_MS ≤ 60 s). */
const MAX_WAIT_MS = 121_000;

type Query = (
  sql: string,
  params: unknown[],
) => Promise<Array<{ seq: string; pending: number; own_pending?: boolean; expires_in_ms: number | null }>>;

/** What tells the waiter that something changed: an acknowledgement announced, or only time passing. */
export interface AcknowledgementEvents {
  /** False: no announcements reach this process (no LISTEN connection); the waiter polls. */
  readonly hearsAcknowledgements: boolean;
  readonly acknowledgementsSeen: number;
  /** Resolves on the next announcement or local application after `seen`, or after `ms`. */
  acknowledgementAfter(seen: number, ms: number): Promise<void>;
  /** This process's own lease, which the waiter checks in process; null: none (count it in the database). */
  readonly ownInstanceId: string | null;
  /** Whether this process's cache no longer holds anything invalidation `seq` removes. */
  applied(seq: number): boolean;
}

/** Without announcements: a short exponential back-off. With them: a re-check at most this often anyway. */
const POLL_CAP_MS = 20;
const SAFETY_RECHECK_MS = 250;

/**
 * Waits until every instance holding a cache lease has applied every invalidation committed so
 * far (or its lease has run out, in database time). Call it after the commit of any change a
 * cached verification could depend on; the change itself needs nothing more: the triggers of
 * migration 1764500000000 notify inside its transaction. Sequence numbers are handed out in
 * commit order, so "acknowledged up to N" means every change up to N has been applied.
 * Healthy instances acknowledge within milliseconds; an unresponsive one holds the caller for at
 * most one lease length. `maxWaitMs` only guards against a bug: past it this throws.
 *
 * Event-driven when this process holds a LISTEN connection: every acknowledgement is announced
 * (NOTIFY on the ack channel, see LEASE_SQL.acknowledge), and the check is re-run on the next
 * announcement, or when the first pending lease runs out, whichever comes first; never on a
 * timer's guess. Without one it polls with a short back-off.
 */
export async function awaitInvalidationsAcknowledged(
  query: Query,
  maxWaitMs: number,
  events?: AcknowledgementEvents,
): Promise<number> {
  const started = performance.now();
  const own = events?.hearsAcknowledgements ? events.ownInstanceId : null;
  // Read before each check: an announcement that lands while the check runs is not missed.
  let seen = events?.acknowledgementsSeen ?? 0;
  let [row] = await query(PENDING_ACKS_SQL, [null, own]);
  if (!row) return (performance.now() - started) / 1000;
  const target = row.seq;
  const ownDone = () => !row.own_pending || events!.applied(Number(target));
  for (let delay = 1; row.pending > 0 || !ownDone(); delay = Math.min(delay * 2, POLL_CAP_MS)) {
    if (performance.now() - started > maxWaitMs) {
      throw new Error('Cache invalidation not acknowledged by every instance in time');
    }
    if (events?.hearsAcknowledgements) {
      const untilExpiry =
        row.pending > 0 ? Math.max(1, (row.expires_in_ms ?? SAFETY_RECHECK_MS) + 1) : SAFETY_RECHECK_MS;
      await events.acknowledgementAfter(seen, Math.min(untilExpiry, SAFETY_RECHECK_MS));
    } else {
      await sleep(delay);
    }
    seen = events?.acknowledgementsSeen ?? 0;
    // Only the other instances' progress needs the database; our own is checked in process.
    // A re-check after a quiet wait re-reads everything (our own lease may have been renewed anew).
    if (!events?.hearsAcknowledgements || row.pending > 0 || !ownDone()) {
      [row] = await query(PENDING_ACKS_SQL, [target, events?.hearsAcknowledgements ? events.ownInstanceId : null]);
      if (!row) break;
    }
  }
  return (performance.now() - started) / 1000;
}

/**
 * The one API for writers (revoke, rotation, directory changes): `awaitAcknowledged()` after the
 * commit. The notification itself is the database's job (triggers), so no change can forget it.
 */
@Injectable()
export class VerificationInvalidation {
  private readonly listeners: Array<(seconds: number) => void> = [];

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly lease: CoherenceLease,
  ) {}

  async awaitAcknowledged(): Promise<void> {
    const seconds = await awaitInvalidationsAcknowledged(
      (sql, params) => this.db.query(sql, params),
      MAX_WAIT_MS,
      this.lease,
    );
    for (const l of this.listeners) l(seconds);
  }

  /** Told how many seconds each change waited until every leased instance had applied it (AuthMetrics reports it). */
  onAcknowledged(listener: (seconds: number) => void): void {
    this.listeners.push(listener);
  }
}
