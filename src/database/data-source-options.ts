import type { PGlite } from '@electric-sql/pglite';
import type { DataSourceOptions } from 'typeorm';
import type { AppConfig } from '../config/app-config.js';
import { EMBEDDED_SOCKET_PORT, socketIsLive, socketPath } from './embedded.js';
import { ENTITIES } from '../core/schema.js';
import { MIGRATIONS } from './migrations/index.js';

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

/** Real PostgreSQL through `pg`: a pool with connect and statement timeouts, so an outage is a fast 503, not a hang. */
export function postgresOptions(
  config: AppConfig,
  url: string,
  pool = { max: config.env.DB_POOL_MAX, min: config.env.DB_POOL_MIN },
): DataSourceOptions {
  const env = config.env;
  return {
    ...COMMON,
    url,
    poolSize: pool.max,
    connectTimeoutMS: env.DB_CONNECT_TIMEOUT_MS,
    applicationName: 'keys-usage-identity',
    extra: {
      statement_timeout: env.DB_STATEMENT_TIMEOUT_MS,
      query_timeout: env.DB_STATEMENT_TIMEOUT_MS + 1000,
      idle_in_transaction_session_timeout: 10_000,
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
