import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import { AuthMetrics } from '../auth-metrics.js';
import { PENDING_ACKS_SQL } from './verification-lease.sql.js';

/** Twice the longest lease any instance may be configured with (VERIFICATION_CACHE_LEASE_MS ≤ 60 s). */
const MAX_WAIT_MS = 121_000;

type Query = (sql: string, params: unknown[]) => Promise<Array<{ seq: string; pending: number }>>;

/**
 * Waits until every instance holding a cache lease has applied every invalidation committed so
 * far (or its lease has run out, in database time). Call it after the commit of any change a
 * cached verification could depend on; the change itself needs nothing more: the triggers of
 * migration 1764500000000 notify inside its transaction. Sequence numbers are handed out in
 * commit order, so "acknowledged up to N" means every change up to N has been applied.
 * Healthy instances acknowledge within milliseconds; an unresponsive one holds the caller for at
 * most one lease length. `maxWaitMs` only guards against a bug: past it this throws.
 */
export async function awaitInvalidationsAcknowledged(query: Query, maxWaitMs: number): Promise<number> {
  const started = performance.now();
  let [row] = await query(PENDING_ACKS_SQL, [null]);
  const target = row?.seq ?? null;
  for (let delay = 1; row && row.pending > 0; delay = Math.min(delay * 2, 20)) {
    if (performance.now() - started > maxWaitMs) {
      throw new Error('Cache invalidation not acknowledged by every instance in time');
    }
    await sleep(delay);
    [row] = await query(PENDING_ACKS_SQL, [target]);
  }
  return (performance.now() - started) / 1000;
}

/**
 * The one API for writers (revoke, rotation, directory changes): `awaitAcknowledged()` after the
 * commit. The notification itself is the database's job (triggers), so no change can forget it.
 */
@Injectable()
export class VerificationInvalidation {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly metrics: AuthMetrics,
  ) {}

  async awaitAcknowledged(): Promise<void> {
    const seconds = await awaitInvalidationsAcknowledged((sql, params) => this.db.query(sql, params), MAX_WAIT_MS);
    this.metrics.invalidationAcknowledged(seconds);
  }
}
