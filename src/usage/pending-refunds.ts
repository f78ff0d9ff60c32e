import { Injectable, Logger, Optional, type OnApplicationShutdown } from '@nestjs/common';
import { isDatabaseUnavailable } from '../auth/http-utils.js';
import { ActivityEvents } from '../events/activity-events.js';
import type { Attribution } from '../common/meters.js';
import { UsageRepository } from './usage.repository.js';

/** A refund waiting for the database: units of one meter of one org on one UTC day, given back to the credential charged. */
interface Refund {
  orgId: string;
  day: string;
  /** The contract's or the deployment's. */
  meter: string;
  count: number;
  by: Attribution;
}

/** Distinct (org, day, meter, credential) refunds held at most; refunds of the same one are summed. */
export const MAX_PENDING_REFUNDS = 10_000;
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;

/**
 * The refunds of this process that have not landed yet: a charge given back after the answer was
 * sent (on the exact path, or once its leased count was written). Each is tried at once and tracked
 * while it is being written, so that `UsageService.settle()` waits for it (`settled()`). One that
 * cannot reach the database (an outage) is kept and retried with backoff until it lands, so an
 * outage does not leave meters over-counted. Bounded: refunds of the same org, day, meter and
 * credential merge into one entry, and past MAX_PENDING_REFUNDS entries a new one is dropped and
 * logged as an error. The number kept is reported (`usage.refunds_pending` activity event: a gauge
 * in /metrics) and every deferral is logged. On shutdown the refunds being written are waited for
 * and the kept ones tried once more; what a `kill -9` still loses is what is kept at that moment
 * (docs/usage.md, "Refunds that land"). One per process (UsageLeasesModule), whichever copy of
 * UsageService gave back.
 */
@Injectable()
export class PendingRefunds implements OnApplicationShutdown {
  private readonly logger = new Logger('PendingRefunds');
  private readonly pending = new Map<string, Refund>();
  /** First tries being written now, until each lands, is kept or fails. */
  private readonly writing = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private delay = FIRST_RETRY_MS;
  private running: Promise<void> | null = null;
  private lastWarned = 0;

  constructor(
    private readonly usage: UsageRepository,
    @Optional() private readonly activity?: ActivityEvents,
  ) {}

  get size(): number {
    return this.pending.size;
  }

  /**
   * Tries the refund now; if the database cannot be reached, keeps it for later. Never throws for an
   * outage. Resolves once it landed or was kept; tracked until then (`settled()`).
   */
  refund(refund: Refund): Promise<void> {
    const writing = this.write(refund);
    this.writing.add(writing);
    const done = () => void this.writing.delete(writing);
    writing.then(done, done);
    return writing;
  }

  /** Resolves once every refund being written now has landed, been kept or failed (failures are the giver's to report). */
  settled(): Promise<void> {
    if (this.writing.size === 0) return Promise.resolve();
    return Promise.allSettled([...this.writing]).then(() => undefined);
  }

  private async write(refund: Refund): Promise<void> {
    try {
      await this.usage.refund(refund.orgId, refund.day, refund.meter, refund.count, refund.by);
      this.activity?.emit({ type: 'usage.refunded', meter: refund.meter, count: refund.count });
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      this.defer(refund, error as Error);
    }
  }

  private defer(refund: Refund, error: Error): void {
    const key = `${refund.orgId} ${refund.day} ${refund.meter} ${refund.by.kind} ${refund.by.credentialId}`;
    const held = this.pending.get(key);
    if (held) held.count += refund.count;
    else if (this.pending.size >= MAX_PENDING_REFUNDS) {
      this.logger.error(
        `refund queue full (${MAX_PENDING_REFUNDS}): dropped a ${refund.meter} refund of ${refund.count} for org ${refund.orgId}`,
      );
      return;
    } else this.pending.set(key, { ...refund });
    // One line per 10 s at most: an outage must not flood the log.
    const now = Date.now();
    if (now - this.lastWarned >= 10_000) {
      this.lastWarned = now;
      this.logger.warn(
        `database unavailable (${error.message}): ${refund.meter} refund of ${refund.count} for org ${refund.orgId} kept for retry (${this.pending.size} pending)`,
      );
    }
    this.report();
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.running) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.retry();
    }, this.delay);
    this.timer.unref();
  }

  /** Tries every pending refund once; resolves when done. Backs off while the database stays away. */
  retry(): Promise<void> {
    this.running ??= this.retryOnce().finally(() => {
      this.running = null;
      if (this.pending.size > 0) this.schedule();
    });
    return this.running;
  }

  private async retryOnce(): Promise<void> {
    for (const [key, refund] of [...this.pending]) {
      try {
        await this.usage.refund(refund.orgId, refund.day, refund.meter, refund.count, refund.by);
      } catch (error) {
        this.delay = Math.min(this.delay * 2, MAX_RETRY_MS);
        if (!isDatabaseUnavailable(error)) this.logger.error(`refund retry failed: ${(error as Error).message}`);
        return;
      }
      this.pending.delete(key);
      this.activity?.emit({ type: 'usage.refunded', meter: refund.meter, count: refund.count });
      this.report();
    }
    this.logger.log('every deferred refund has landed');
    this.delay = FIRST_RETRY_MS;
  }

  private report(): void {
    this.activity?.emit({ type: 'usage.refunds_pending', pending: this.pending.size });
  }

  /** SIGTERM: the refunds being written finish, then one last try of those kept, before the pool closes; what still cannot land is logged. */
  async onApplicationShutdown(): Promise<void> {
    await this.settled();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.running) await this.running;
    if (this.pending.size > 0) await this.retryOnce();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.size > 0) {
      this.logger.error(
        `shutting down with ${this.pending.size} refund(s) that could not reach the database: meters stay over-counted by them`,
      );
    }
  }
}
