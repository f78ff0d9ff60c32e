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

export interface EmbeddedShare {
  stop(): Promise<void>;
}

/** Serves the embedded database on DATA_DIR's Unix socket; returns null where sockets cannot be made. */
export async function shareEmbedded(db: PGlite, dataDir: string): Promise<EmbeddedShare | null> {
  const path = socketPath(dataDir);
  if (path.length > 100) return null; // beyond the Unix socket path limit
  if (existsSync(path)) unlinkSync(path); // stale: socketIsLive was checked at open
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  const server = new PGLiteSocketServer({ db, path, maxConnections: 8 });
  await server.start();
  return {
    stop: async () => {
      await server.stop();
      if (existsSync(path)) unlinkSync(path);
    },
  };
}
