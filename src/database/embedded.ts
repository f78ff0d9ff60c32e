import { existsSync, mkdirSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';

/**
 * The embedded database is one PGlite instance, owned by one process. While the server runs it
 * also listens on a Unix socket in DATA_DIR, so the operator CLI (a second process) talks to the
 * same database through the server instead of opening the files twice, which would corrupt them.
 */
export const EMBEDDED_SOCKET_PORT = 5432;
export const socketPath = (dataDir: string) => join(dataDir, `.s.PGSQL.${EMBEDDED_SOCKET_PORT}`);

export async function socketIsLive(path: string): Promise<boolean> {
  if (!existsSync(path)) return false;
  return new Promise((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export async function openEmbedded(dataDir: string): Promise<PGlite> {
  if (await socketIsLive(socketPath(dataDir))) {
    throw new Error(
      `Another process is serving the embedded database in ${dataDir}. Stop it first, or set DATABASE_URL to use PostgreSQL.`,
    );
  }
  const dir = join(dataDir, 'pgdata');
  mkdirSync(dir, { recursive: true });
  // Loaded only for the embedded database: a PostgreSQL deployment never pays for the WASM build.
  const { PGlite } = await import('@electric-sql/pglite');
  // users.email is citext (case-insensitive uniqueness); PGlite loads contrib extensions on request.
  const { citext } = await import('@electric-sql/pglite/contrib/citext');
  return PGlite.create(dir, { extensions: { citext } });
}

/**
 * Notifications raised inside the embedded database, delivered in this process. The database is
 * one PostgreSQL session shared by the server's own connection and every socket client (the
 * CLI), so once the server LISTENs, a commit by either carries its notifications in that
 * commit's own answer: PGlite hands the server's to `listen()` callbacks, and `shareEmbedded`
 * reads the socket clients' out of the bytes it relays, calling the listeners *before* the
 * client sees its COMMIT answered. Either way a listener has run before the writer goes on.
 */
type Listener = (payload: string) => void;
const socketListeners = new WeakMap<PGlite, Map<string, Set<Listener>>>();

/** LISTENs on `channel` of the embedded database; the returned function stops listening. */
export async function listenEmbedded(db: PGlite, channel: string, listener: Listener): Promise<() => Promise<void>> {
  const byChannel = socketListeners.get(db) ?? new Map<string, Set<Listener>>();
  socketListeners.set(db, byChannel);
  const set = byChannel.get(channel) ?? new Set<Listener>();
  byChannel.set(channel, set);
  set.add(listener);
  const unlisten = await db.listen(channel, listener);
  return async () => {
    set.delete(listener);
    await unlisten();
  };
}

/**
 * The database as the socket server sees it: the same instance, except that the protocol bytes
 * relayed to socket clients are read for notifications on the way (see `listenEmbedded`).
 */
async function relayingNotifications(db: PGlite): Promise<PGlite> {
  const { protocol } = await import('@electric-sql/pglite');
  const parser = new protocol.Parser();
  const deliver = (data: Uint8Array) => {
    const byChannel = socketListeners.get(db);
    if (!byChannel?.size) return;
    parser.parse(data, (msg) => {
      if (!(msg instanceof protocol.messages.NotificationResponseMessage)) return;
      for (const l of byChannel.get(msg.channel) ?? []) l(msg.payload);
    });
  };
  const execProtocolRawStream: PGlite['execProtocolRawStream'] = (message, options) =>
    db.execProtocolRawStream(message, {
      ...options,
      onRawData: (data) => {
        deliver(data);
        options.onRawData(data);
      },
    });
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'execProtocolRawStream') return execProtocolRawStream;
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

export interface EmbeddedShare {
  stop(): Promise<void>;
}

/** Serves the embedded database on DATA_DIR's Unix socket; returns null where sockets cannot be made. */
export async function shareEmbedded(db: PGlite, dataDir: string): Promise<EmbeddedShare | null> {
  const path = socketPath(dataDir);
  if (path.length > 100) return null; // beyond the Unix socket path limit
  if (existsSync(path)) unlinkSync(path); // stale: socketIsLive was checked at open
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  const server = new PGLiteSocketServer({ db: await relayingNotifications(db), path, maxConnections: 8 });
  await server.start();
  return {
    stop: async () => {
      await server.stop();
      if (existsSync(path)) unlinkSync(path);
    },
  };
}
