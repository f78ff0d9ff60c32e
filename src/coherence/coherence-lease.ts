import { Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { DataSource } from 'typeorm';
import { Settings } from '../settings/settings.js';
import { inProcessNotificationsOf, type InProcessNotifications } from '../database/in-process-notifications.js';
import { pgPoolOf } from '../database/pg-pool.js';
import { Announcements } from './announcements.js';
import { ACK_CHANNEL, INVALIDATION_CHANNEL, parseInvalidation, type InvalidationTargets } from './coherence.sql.js';
import { LeaseKeeper } from './lease-keeper.js';

export type { InvalidationTargets } from './coherence.sql.js';

/**
 * Called with what changed, or with null: "drop everything" (the lease lapsed, or a TRUNCATE). A
 * listener whose part of applying a change ends later (leases of a key given back to the database)
 * returns a promise: the change is acknowledged once it settles, or after a sixth of a lease.
 */
export type InvalidationListener = (targets: InvalidationTargets | null) => void | Promise<void>;

/** An opaque mark taken before a database read; the read's answer may be cached only if it still holds. */
export type CacheStamp = number;

/**
 * This instance's right to answer from memory (every CoherentCache's). It holds while (1) a
 * dedicated LISTEN connection, proven at connect to receive notifications, is alive and (2) the
 * lease row was renewed on that connection less than a lease length ago (LeaseKeeper). The local
 * deadline is counted from when the renewal was *sent*, so it always ends before the row's
 * `expires_at` (database time): when a waiting writer sees the row expired, this instance has
 * already stopped using its caches. Losing either condition drops every cache; the lease is
 * then acquired afresh (its acknowledged sequence jumps to the current one) with empty caches.
 *
 * Every notification received bumps the epoch: a database read that started before it is not
 * cached (it may predate the change), and the invalidation is applied before it is acknowledged.
 *
 * On the embedded database (PGlite, in this process) there is nothing to lease: every writer,
 * the CLI included (through the server's socket), commits in this process, and the
 * notification is applied before its commit is answered (see `listenEmbedded` in src/database/embedded.ts). The caches are
 * then usable for as long as the process runs; no lease row, no acknowledgement to wait for.
 */
@Injectable()
export class CoherenceLease implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly instanceId = randomUUID();
  readonly enabled: boolean;
  private validUntil = 0;
  private epoch = 0;
  private readonly listeners: InvalidationListener[] = [];
  /** The highest invalidation received, and the highest applied (what listeners returned settled too). */
  private receivedSeq = 0;
  private ackSeq = 0;
  /** What listeners still finish before the changes received so far count as applied; null: nothing. */
  private settling: Promise<void> | null = null;
  private readonly settleMs: number;
  private ackScheduled = false;
  private readonly acks = new Announcements();
  private readonly embedded: InProcessNotifications | undefined;
  private unlistenEmbedded: (() => Promise<void>) | null = null;
  private readonly keeper: LeaseKeeper | null;

  constructor(settings: Settings, @InjectDataSource() dataSource: DataSource) {
    // A real PostgreSQL pool lends its settings to the LISTEN connection; the embedded PGlite
    // adapter (a `connection` object, a pool of one) cannot, and needs none. A host's DataSource
    // on anything else gets no cache.
    this.embedded = inProcessNotificationsOf(dataSource);
    // Well inside the renewal interval (a third of a lease), which requires earlier changes acknowledged.
    this.settleMs = Math.floor(settings.verificationCache.leaseMs / 6);
    const options =
      (pgPoolOf(dataSource) as { options?: pg.PoolConfig & { connection?: unknown } } | undefined)?.options ?? null;
    const pool = !this.embedded && options && !options.connection ? options : null;
    this.enabled = settings.verificationCache.enabled && (pool !== null || this.embedded !== undefined);
    // Behind a transaction pooler the LISTEN connection and its acknowledgements need a session:
    // the direct URL's (its address wins over the pool's; timeouts and TLS settings are the pool's).
    const direct = settings.database.directUrl;
    this.keeper =
      this.enabled && pool
        ? new LeaseKeeper(
            {
              pool: direct ? { ...pool, connectionString: direct } : pool,
              direct: direct !== null,
              instanceId: this.instanceId,
              leaseMs: settings.verificationCache.leaseMs,
              notify: (channel, payload) => dataSource.query('SELECT pg_notify($1, $2)', [channel, payload]),
            },
            {
              usable: () => this.usable(),
              renewed: (until) => (this.validUntil = until),
              lapse: () => this.lapse(),
              notified: (m) => (m.channel === ACK_CHANNEL ? this.acks.announce() : this.received(m.payload)),
            },
          )
        : null;
  }

  /** True while cached answers may be used. Cheap: called on every request. */
  usable(): boolean {
    return this.validUntil > performance.now();
  }

  /** A stamp to take before a database read, or null when the answer must not be cached. */
  stamp(): CacheStamp | null {
    return this.usable() ? this.epoch : null;
  }

  /** Whether an answer read under `stamp` may be cached now. */
  holds(stamp: CacheStamp | null): boolean {
    return stamp !== null && stamp === this.epoch && this.usable();
  }

  /** How many acknowledgements this instance has heard of; see `acknowledgementAfter`. */
  get acknowledgementsSeen(): number {
    return this.acks.seen;
  }

  /**
   * For a writer waiting on acknowledgements (see Announcements.after). Without a LISTEN
   * connection nothing is announced here: it then simply waits `ms`.
   */
  acknowledgementAfter(seen: number, ms: number): Promise<void> {
    return this.acks.after(seen, ms);
  }

  /** Whether acknowledgements reach this instance as they happen (a live LISTEN connection). */
  get hearsAcknowledgements(): boolean {
    return this.keeper?.listening ?? false;
  }

  /** This instance's lease id while it listens: a writer here checks this lease in process. */
  get ownInstanceId(): string | null {
    return this.hearsAcknowledgements ? this.instanceId : null;
  }

  /**
   * Whether this instance has applied invalidation `seq` (notifications arrive in commit order,
   * and a read that started before one was applied is never cached). Not "the lease lapsed":
   * a renewal in flight may revive the cache before a late notification lands, so a lapse only
   * wakes the writer to ask the database (where this lease then expires or re-acquires past it).
   */
  applied(seq: number): boolean {
    return this.ackSeq >= seq;
  }

  onInvalidate(listener: InvalidationListener): void {
    this.listeners.push(listener);
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.enabled) return;
    if (this.embedded) {
      this.unlistenEmbedded = await this.embedded.listen(INVALIDATION_CHANNEL, (payload) => this.received(payload));
      this.validUntil = Number.POSITIVE_INFINITY;
      return;
    }
    await this.keeper?.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.acks.wakeAll();
    if (this.unlistenEmbedded) {
      this.lapse();
      await this.unlistenEmbedded().catch(() => undefined);
      this.unlistenEmbedded = null;
    }
    if (this.keeper) await this.keeper.stop();
    else this.lapse();
  }

  /** Stop using the caches at once and forget them. */
  private lapse(): void {
    this.validUntil = 0;
    this.epoch++;
    for (const l of this.listeners) void l(null);
    this.acks.announce();
  }

  private received(payload: string | undefined): void {
    this.epoch++;
    const { seq, targets } = parseInvalidation(payload);
    let work: Promise<void>[] | null = null;
    for (const l of this.listeners) {
      const w = l(targets);
      if (w) (work ??= []).push(w);
    }
    if (work) this.settle(work);
    if (seq > this.receivedSeq) this.receivedSeq = seq;
    if (this.embedded) {
      this.ackSeq = this.receivedSeq;
      return; // applied before the writer's commit was answered: nobody waits
    }
    if (!this.ackScheduled) {
      this.ackScheduled = true;
      // Notifications that arrive together (one read of the connection, emitted in one go) are
      // acknowledged together, once all are applied: right after them, not a loop turn later
      // (unless a listener is still finishing its part).
      queueMicrotask(() => {
        this.ackScheduled = false;
        const upTo = this.receivedSeq;
        if (this.settling) void this.settling.then(() => this.acknowledge(upTo));
        else this.acknowledge(upTo);
      });
    }
  }

  private acknowledge(seq: number): void {
    if (seq > this.ackSeq) this.ackSeq = seq;
    this.acks.announce(); // a writer in this process waiting on this very change goes on at once
    void this.keeper?.acknowledge(this.ackSeq);
  }

  /** Adds listeners' work to what the next acknowledgement waits for (after the earlier work), bounded. */
  private settle(work: Promise<void>[]): void {
    const done = Promise.race([Promise.allSettled(work), sleep(this.settleMs, undefined, { ref: false })]).then(
      () => undefined,
    );
    const all = this.settling ? Promise.all([this.settling, done]).then(() => undefined) : done;
    this.settling = all;
    void all.then(() => {
      if (this.settling === all) this.settling = null;
    });
  }
}
