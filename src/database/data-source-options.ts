import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { DataSourceOptions } from 'typeorm';
import { IDLE_IN_TRANSACTION_MS, type AppConfig } from '../config/app-config.js';
import { EMBEDDED_SOCKET_PORT, socketIsLive, socketPath } from './embedded.js';
import { ENTITIES, MIGRATIONS } from '../core/schema.js';

const COMMON = {
  type: 'postgres' as const,
  entities: ENTITIES,
  migrations: MIGRATIONS,
  migrationsRun: false,
  synchronize: false,
  installExtensions: false,
  uuidExtension: 'pgcrypto' as const,
  logging: ['error' as const],
};

/**
 * node-postgres uses one setting, `connectionTimeoutMillis`, both for opening a connection and for
 * waiting until a pooled one is free. A healthy database under a burst keeps every connection busy
 * for a moment; with the connect timeout as the wait, the requests queued behind them were failed
 * as if the database were down (503). The pool gets the longer acquire wait, and each client opens
 * its connection under the connect timeout of its own (the client's timer fires before the pool's).
 */
function clientWithConnectTimeout(connectTimeoutMs: number): typeof pg.Client {
  return class ConnectTimeoutClient extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, connectionTimeoutMillis: connectTimeoutMs });
    }
  };
}

/**
 * Real PostgreSQL through `pg`: a pool with connect and statement timeouts, so an outage is a fast
 * 503, not a hang. `pooled`: the URL may go through a transaction pooler, which refuses startup
 * parameters (PgBouncer: "unsupported startup parameter"), so the server-side timeouts are not
 * sent at connect; they travel with each transaction instead (adaptToTransactionPooler, set up
 * from the module's `database` options), and the client-side `query_timeout` bounds the rest.
 */
export function postgresOptions(
  config: AppConfig,
  url: string,
  pool = { max: config.env.DB_POOL_MAX, min: config.env.DB_POOL_MIN },
  pooled = false,
): DataSourceOptions {
  const env = config.env;
  const startupParameters = pooled
    ? {}
    : {
        statement_timeout: env.DB_STATEMENT_TIMEOUT_MS,
        idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
      };
  return {
    ...COMMON,
    url,
    poolSize: pool.max,
    // The pool's wait for a free connection (see clientWithConnectTimeout for the connect timeout).
    connectTimeoutMS: Math.max(env.DB_POOL_ACQUIRE_TIMEOUT_MS, env.DB_CONNECT_TIMEOUT_MS),
    applicationName: 'keys-usage-identity',
    extra: {
      Client: clientWithConnectTimeout(env.DB_CONNECT_TIMEOUT_MS),
      ...startupParameters,
      query_timeout: env.DB_STATEMENT_TIMEOUT_MS + 1000,
      keepAlive: true,
      // pg-pool closes idle connections after 10 s, but never below `min`.
      min: pool.min,
    },
  };
}

/** The embedded PGlite through its node-postgres adapter: one in-process connection, a pool of one, never idled out. */
export async function embeddedOptions(db: PGlite): Promise<DataSourceOptions> {
  const { createPgConfig } = await import('@electric-sql/pglite/node-postgres');
  const pg = createPgConfig(db);
  return { ...COMMON, extra: { connection: pg.connection, max: 1, idleTimeoutMillis: 0 } };
}

/**
 * For a second process (the CLI) on the embedded database: the running server's socket when
 * there is one, else null (the caller then opens the files itself).
 */
export async function runningEmbeddedServerOptions(config: AppConfig): Promise<DataSourceOptions | null> {
  if (!(await socketIsLive(socketPath(config.dataDir)))) return null;
  return {
    ...COMMON,
    host: config.dataDir,
    port: EMBEDDED_SOCKET_PORT,
    username: 'postgres',
    database: 'postgres',
    extra: { max: 1 },
  };
}
