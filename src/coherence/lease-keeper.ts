import { Logger } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { LEASE_SQL } from './coherence.sql.js';
import { NotificationsNotDeliveredError, openLeaseConnection } from './lease-connection.js';

const RECONNECT_MS = 500;

/** What the keeper tells the lease it keeps (CoherenceLease). */
export interface LeaseHolder {
  usable(): boolean;
  /** The row was renewed: cached answers may be used until `validUntil` (performance.now() time). */
  renewed(validUntil: number): void;
  /** Stop using the cache at once and forget it. */
  lapse(): void;
  /** A change notification or an acknowledgement arrived on the LISTEN connection. */
  notified(message: pg.Notification): void;
}

export interface LeaseKeeperOptions {
  pool: pg.PoolConfig;
  /** Whether the pool's address was replaced by DATABASE_DIRECT_URL (for the start-up check's message). */
  direct: boolean;
  instanceId: string;
  leaseMs: number;
  /** Sends a notification through the application's pool (the connection's start-up proof). */
  notify: (channel: string, payload: string) => Promise<unknown>;
}

/**
 * Keeps the lease row on its own LISTEN connection (see lease-connection.ts): acquires it,
 * renews it every third of a lease, replaces a lost connection, and releases the row at shutdown.
 * A renewal succeeds only if every change committed before the previous renewal has been
 * acknowledged (LEASE_SQL.renew): if notifications silently stop arriving, the lease lapses
 * within two renewal intervals (two thirds of a lease) and the connection is replaced.
 */
export class LeaseKeeper {
  private readonly logger = new Logger('CoherenceLease');
  private client: pg.Client | null = null;
  private connecting: pg.Client | null = null;
  private renewing = false;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  /** The sequence the last renewal read: the next renewal requires it acknowledged. */
  private requiredSeq = '0';

  constructor(
    private readonly o: LeaseKeeperOptions,
    private readonly holder: LeaseHolder,
  ) {}

  /** Whether the LISTEN connection is live (acknowledgements then reach this process as they happen). */
  get listening(): boolean {
    return this.client !== null;
  }

  /**
   * The first lease is awaited so a fresh instance serves from its cache at once; failing to
   * get it only means database reads until the reconnect loop succeeds. Notifications that do
   * not arrive at all (a pooler in transaction mode) stop the start with an error that says so.
   */
  start(): Promise<void> {
    return this.connect(true);
  }

  /** Records that this instance has applied every invalidation up to `seq` (and announces it). */
  async acknowledge(seq: number): Promise<void> {
    const client = this.client;
    if (!client) return;
    try {
      await client.query(LEASE_SQL.acknowledge, [this.o.instanceId, seq]);
    } catch {
      this.lost(client);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    this.holder.lapse();
    // A connection still being opened is closed as it is; it holds no lease yet.
    await this.connecting?.end().catch(() => undefined);
    if (!client) return;
    // Writers stop waiting for this instance at once instead of at its lease's end. Bounded:
    // against a database that stopped answering, shutdown must not wait on either.
    await Promise.race([client.query(LEASE_SQL.release, [this.o.instanceId]).catch(() => undefined), sleep(500)]);
    await Promise.race([client.end().catch(() => undefined), sleep(500)]);
  }

  private async connect(atStart = false): Promise<void> {
    if (this.stopped) return;
    let client: pg.Client | null = null;
    try {
      client = await openLeaseConnection(
        {
          pool: this.o.pool,
          instanceId: this.o.instanceId,
          leaseMs: this.o.leaseMs,
          via: this.o.direct ? 'DATABASE_DIRECT_URL' : 'DATABASE_URL',
          notify: this.o.notify,
          onNotification: (message) => this.holder.notified(message),
          onLost: (c) => this.lost(c),
        },
        (c) => (this.connecting = client = c),
      );
      if (this.stopped) throw new Error('shutting down');
      this.client = client;
      await this.renew();
      if (!this.timer) this.timer = setInterval(() => void this.renew(), Math.floor(this.o.leaseMs / 3)).unref();
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
    this.holder.lapse();
    if (!this.stopped && !this.client && !this.reconnectTimer) {
      this.reconnectTimer = setTimeout(() => {
        this.reconnectTimer = null;
        void this.connect();
      }, RECONNECT_MS).unref();
    }
  }

  private async renew(): Promise<void> {
    const client = this.client;
    if (!client || this.renewing) return;
    this.renewing = true;
    const { instanceId, leaseMs } = this.o;
    try {
      const sent = performance.now();
      let renewed = false;
      if (this.holder.usable()) {
        const { rows } = await client.query<{ seq: string; renewed: boolean; caught_up: boolean | null }>(
          LEASE_SQL.renew,
          [instanceId, leaseMs, this.requiredSeq],
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
        this.holder.lapse();
        const { rows } = await client.query<{ seq: string }>(LEASE_SQL.acquire, [instanceId, leaseMs]);
        this.requiredSeq = rows[0].seq;
      }
      if (this.client !== client) return;
      // Counted from the send, and a little short of it: always before the row's expires_at.
      this.holder.renewed(sent + leaseMs - Math.min(250, leaseMs / 10));
    } catch (error) {
      this.logger.warn(`verification cache lease lost, using the database: ${(error as Error).message}`);
      this.lost(client);
    } finally {
      this.renewing = false;
    }
  }
}
