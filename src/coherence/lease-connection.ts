import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { ACK_CHANNEL, INVALIDATION_CHANNEL } from './coherence.sql.js';

/** Raised when notifications sent through the pool do not reach the LISTEN connection. */
export class NotificationsNotDeliveredError extends Error {}

export interface LeaseConnectionOptions {
  pool: pg.PoolConfig;
  instanceId: string;
  leaseMs: number;
  /** The setting the connection's address comes from, for the message when notifications do not arrive. */
  via: 'DATABASE_URL' | 'DATABASE_DIRECT_URL';
  /** Sends a notification through another connection (the application's pool). */
  notify: (channel: string, payload: string) => Promise<unknown>;
  onNotification: (message: pg.Notification) => void;
  onLost: (client: pg.Client) => void;
}

/** How long a notification sent through the pool may take to reach the LISTEN connection at connect. */
export const probeTimeoutMs = (leaseMs: number) => Math.max(1000, Math.min(leaseMs, 5000));

/**
 * The lease's own LISTEN connection (a `pg.Client`, never one of the pool), proven to receive
 * notifications: once it listens, a notification on a channel of its own is sent through the
 * *pool* and must arrive while this connection sits idle. Behind a pooler in transaction mode
 * (PgBouncer `pool_mode = transaction`) the server connection that ran LISTEN is handed to other
 * clients between transactions, and a notification for it never reaches us: that is refused here
 * with a NotificationsNotDeliveredError, instead of a cache that silently misses every change.
 * `onLost` is called once the connection is unusable (it is then the caller's to replace).
 */
export async function openLeaseConnection(
  o: LeaseConnectionOptions,
  register: (client: pg.Client) => void,
): Promise<pg.Client> {
  const client = new pg.Client({
    ...o.pool,
    application_name: `kui-verification-lease ${o.instanceId}`,
    // A renewal that cannot finish within a lease length is a lost connection. (The lease
    // itself lapses by the clock whatever the connection does: this only frees a dead one.)
    query_timeout: o.leaseMs,
    keepAlive: true,
  });
  const probe = `kui_probe_${randomBytes(8).toString('hex')}`;
  let heard: () => void = () => undefined;
  const probed = new Promise<void>((resolve) => (heard = resolve));
  client.on('error', () => o.onLost(client));
  client.on('end', () => o.onLost(client));
  client.on('notification', (message) => (message.channel === probe ? heard() : o.onNotification(message)));
  register(client);
  await client.connect();
  await client.query(`LISTEN ${INVALIDATION_CHANNEL}; LISTEN ${ACK_CHANNEL}; LISTEN ${probe}`);
  await o.notify(probe, o.instanceId);
  const ms = probeTimeoutMs(o.leaseMs);
  let timer: NodeJS.Timeout | undefined;
  const arrived = await Promise.race([
    probed.then(() => true),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms))),
  ]);
  clearTimeout(timer);
  if (!arrived) {
    throw new NotificationsNotDeliveredError(
      `the verification cache's LISTEN connection did not receive a notification sent through the pool within ${ms} ms. ` +
        `${o.via} probably goes through a connection pooler in transaction mode (PgBouncer pool_mode=transaction) or a proxy ` +
        `that drops idle server-to-client traffic. Point ${o.via} at PostgreSQL or at a session-mode pool` +
        (o.via === 'DATABASE_URL' ? ' (or keep the pooler there and set DATABASE_DIRECT_URL to one)' : '') +
        ', or set VERIFICATION_CACHE=false',
    );
  }
  await client.query(`UNLISTEN ${probe}`);
  return client;
}
