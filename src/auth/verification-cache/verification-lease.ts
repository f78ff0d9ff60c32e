import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { DataSource } from 'typeorm';
import { Settings } from '../../settings/settings.js';
import { inProcessNotificationsOf, type InProcessNotifications } from '../../database/in-process-notifications.js';
import { pgPoolOf } from '../../database/pg-pool.js';
import { AuthMetrics } from '../auth-metrics.js';
import { Announcements } from './announcements.js';
import { NotificationsNotDeliveredError, openLeaseConnection } from './lease-connection.js';
import {
  ACK_CHANNEL,
  INVALIDATION_CHANNEL,
  LEASE_SQL,
  parseInvalidation,
  type InvalidationTargets,
} from './verification-lease.sql.js';

export type { InvalidationTargets } from './verification-lease.sql.js';

/** Called with what changed, or with null: "drop everything" (the lease lapsed). */
export type InvalidationListener = (targets: InvalidationTargets | null) => void;

/** An opaque mark taken before a database read; the read's answer may be cached only if it still holds. */
export type CacheStamp = number;

const RECONNECT_MS = 500;

/**
 * This instance's right to answer verifications from memory. It holds while (1) a dedicated
 * LISTEN connection (see lease-connection.ts), proven at connect to receive notifications, is
 * alive and (2) the lease row was renewed on that connection less than a lease length ago. The
 * local deadline is counted from when the renewal was *sent*, so it always ends before the row's
 * `expires_at` (database time): when a waiting writer sees the row expired, this instance has
 * already stopped using its cache. Losing either condition drops the whole cache; the lease is
 * then acquired afresh (its acknowledged sequence jumps to the current one) with an empty cache.
 * A renewal succeeds only if every change committed before the previous renewal has been
 * acknowledged (LEASE_SQL.renew): if notifications silently stop arriving, the cache is dropped
 * within two renewal intervals (two thirds of a lease) and the connection replaced.
 *
 * Every notification received bumps the epoch: a database read that started before it is not
 * cached (it may predate the change), and the invalidation is applied before it is acknowledged.
 *
 * On the embedded database (PGlite, in this process) there is nothing to lease: every writer,
 * the CLI included (through the server's socket), commits in this process, and the
 * notification is applied before its commit is answered (see `listenEmbedded` in src/database/embedded.ts). The cache is
 * then usable for as long as the process runs; no lease row, no acknowledgement to wait for.
 */
@Injectable()
export class VerificationLease implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('VerificationLease');
  readonly instanceId = randomUUID();
  readonly enabled: boolean;
  private readonly leaseMs: number;
  private client: pg.Client | null = null;
  private connecting: pg.Client | null = null;
  private validUntil = 0;
  private epoch = 0;
  private renewing = false;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private readonly listeners: InvalidationListener[] = [];
  private ackSeq = 0;
  /** The sequence the last renewal read: the next renewal requires it acknowledged. */
  private requiredSeq = '0';
  private ackScheduled = false;
  private readonly acks = new Announcements();
  private readonly poolOptions: pg.PoolConfig | null;
  /** Whether the LISTEN connection goes to the direct URL (for the start-up check's message). */
  private readonly direct: boolean;
  private readonly embedded: InProcessNotifications | undefined;
  private unlistenEmbedded: (() => Promise<void>) | null = null;

  constructor(
    settings: Settings,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly metrics: AuthMetrics,
  ) {
    this.leaseMs = settings.verificationCache.leaseMs;
    // A real PostgreSQL pool lends its settings to the LISTEN connection; the embedded PGlite
    // adapter (a `connection` object, a pool of one) cannot, and needs none. A host's DataSource
    // on anything else gets no cache.
    this.embedded = inProcessNotificationsOf(dataSource);
    const options =
      (pgPoolOf(dataSource) as { options?: pg.PoolConfig & { connection?: unknown } } | undefined)?.options ?? null;
    const pool = !this.embedded && options && !options.connection ? options : null;
    // Behind a transaction pooler the LISTEN connection and its acknowledgements need a session:
    // the direct URL's (its address wins over the pool's; timeouts and TLS settings are the pool's).
    const direct = settings.database.directUrl;
    this.poolOptions = pool && direct ? { ...pool, connectionString: direct } : pool;
    this.direct = direct !== null;
    this.enabled = settings.verificationCache.enabled && (this.poolOptions !== null || this.embedded !== undefined);
    metrics.leaseValid = () => this.usable();
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
    return this.client !== null;
  }

  /** This instance's lease id while it listens: a writer here checks this lease in process. */
  get ownInstanceId(): string | null {
    return this.client ? this.instanceId : null;
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
    // The first lease is awaited so a fresh instance serves from its cache at once; failing to
    // get it only means database reads until the reconnect loop succeeds. Notifications that do
    // not arrive at all (a pooler in transaction mode) stop the start with an error that says so.
    await this.connect(true);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.acks.wakeAll();
    if (this.unlistenEmbedded) {
      this.lapse();
      await this.unlistenEmbedded().catch(() => undefined);
      this.unlistenEmbedded = null;
    }
    if (this.timer) clearInterval(this.timer);
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    this.lapse();
    // A connection still being opened is closed as it is; it holds no lease yet.
    await this.connecting?.end().catch(() => undefined);
    if (!client) return;
    // Writers stop waiting for this instance at once instead of at its lease's end. Bounded:
    // against a database that stopped answering, shutdown must not wait on either.
    await Promise.race([client.query(LEASE_SQL.release, [this.instanceId]).catch(() => undefined), sleep(500)]);
    await Promise.race([client.end().catch(() => undefined), sleep(500)]);
  }

  private async connect(atStart = false): Promise<void> {
    if (this.stopped || !this.poolOptions) return;
    let client: pg.Client | null = null;
    try {
      client = await openLeaseConnection(
        {
          pool: this.poolOptions,
          instanceId: this.instanceId,
          leaseMs: this.leaseMs,
          via: this.direct ? 'DATABASE_DIRECT_URL' : 'DATABASE_URL',
          notify: (channel, payload) => this.dataSource.query('SELECT pg_notify($1, $2)', [channel, payload]),
          onNotification: (message) =>
            message.channel === ACK_CHANNEL ? this.acks.announce() : this.received(message.payload),
          onLost: (c) => this.lost(c),
        },
        (c) => (this.connecting = client = c),
      );
      if (this.stopped) throw new Error('shutting down');
      this.client = client;
      await this.renew();
      if (!this.timer) this.timer = setInterval(() => void this.renew(), Math.floor(this.leaseMs / 3)).unref();
    } catch (error) {
      if (client) this.lost(client);
      if (atStart && error instanceof NotificationsNotDeliveredError) {
        this.stopped = true;
        if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
        throw error;
      }
      if (!this.stopped)
        this.logger.warn(`verification cache lease unavailable, using the database: ${(error as Error).message}`);
    } finally {
      if (client && this.connecting === client) this.connecting = null;
    }
  }

  private lost(client: pg.Client): void {
    client.removeAllListeners('notification');
    client.end().catch(() => undefined);
    // A late event of a connection already replaced says nothing about the current lease.
    if (this.client !== null && this.client !== client) return;
    this.client = null;
    this.lapse();
    if (!this.stopped && !this.client && !this.reconnectTimer) {
      this.reconnectTimer = setTimeout(() => {
        this.reconnectTimer = null;
        void this.connect();
      }, RECONNECT_MS).unref();
    }
  }

  /** Stop using the cache at once and forget it. */
  private lapse(): void {
    this.validUntil = 0;
    this.epoch++;
    for (const l of this.listeners) l(null);
    this.acks.announce();
  }

  private async renew(): Promise<void> {
    const client = this.client;
    if (!client || this.renewing) return;
    this.renewing = true;
    try {
      const sent = performance.now();
      let renewed = false;
      if (this.usable()) {
        const { rows } = await client.query<{ seq: string; renewed: boolean; caught_up: boolean | null }>(
          LEASE_SQL.renew,
          [this.instanceId, this.leaseMs, this.requiredSeq],
        );
        if (rows[0].caught_up === false) {
          this.logger.warn(
            'verification cache: changes are not reaching this instance (notifications lost); dropping the cache and reconnecting',
          );
          this.lost(client);
          return;
        }
        renewed = rows[0].renewed;
        if (renewed) this.requiredSeq = rows[0].seq;
      }
      if (!renewed) {
        // The lease ran out (a pause, a slow renewal): writers may have stopped waiting for us.
        this.lapse();
        const { rows } = await client.query<{ seq: string }>(LEASE_SQL.acquire, [this.instanceId, this.leaseMs]);
        this.requiredSeq = rows[0].seq;
      }
      if (this.client !== client) return;
      // Counted from the send, and a little short of it: always before the row's expires_at.
      this.validUntil = sent + this.leaseMs - Math.min(250, this.leaseMs / 10);
    } catch (error) {
      this.logger.warn(`verification cache lease lost, using the database: ${(error as Error).message}`);
      this.lost(client);
    } finally {
      this.renewing = false;
    }
  }

  private received(payload: string | undefined): void {
    this.epoch++;
    const { seq, targets } = parseInvalidation(payload);
    for (const l of this.listeners) l(targets);
    if (seq > this.ackSeq) this.ackSeq = seq;
    if (this.embedded) return; // applied before the writer's commit was answered: nobody waits
    this.acks.announce(); // a writer in this process waiting on this very change goes on at once
    if (!this.ackScheduled) {
      this.ackScheduled = true;
      // Notifications that arrive together (one read of the connection, emitted in one go) are
      // acknowledged together, once all are applied: right after them, not a loop turn later.
      queueMicrotask(() => void this.acknowledge());
    }
  }

  private async acknowledge(): Promise<void> {
    this.ackScheduled = false;
    const client = this.client;
    if (!client) return;
    try {
      await client.query(LEASE_SQL.acknowledge, [this.instanceId, this.ackSeq]);
    } catch {
      this.lost(client);
    }
  }
}
