import type { Pool, PoolClient } from 'pg';
import type { DataSource } from 'typeorm';

/**
 * The node-postgres pool behind a TypeORM DataSource: TypeORM's PostgresDriver keeps it as
 * `master`, typed `any`. The one place that reaches into the driver; hot paths run named
 * statements on this pool, off TypeORM's entity path. Undefined before the DataSource is
 * initialised or for a driver that is not PostgreSQL.
 */
export function pgPoolOf(dataSource: DataSource): Pool | undefined {
  const driver: unknown = dataSource.driver;
  if (dataSource.options?.type !== 'postgres' || typeof driver !== 'object' || driver === null || !('master' in driver))
    return undefined;
  return (driver.master ?? undefined) as Pool | undefined;
}

/** As pgPoolOf, for code that runs only once the DataSource is open: a missing pool is a bug. */
export function pgPool(dataSource: DataSource): Pool {
  const pool = pgPoolOf(dataSource);
  if (!pool) throw new Error('The DataSource has no PostgreSQL pool: is it initialised, and of type postgres?');
  return pool;
}

type PooledClient = PoolClient & {
  _getActiveQuery?: () => unknown;
  _queryQueue?: unknown[];
  _txStatus?: string | null;
};
const guarded = new WeakSet<Pool>();

/**
 * Makes the pool discard, rather than reuse, a client that comes back unsafe: with a statement
 * still on the wire or queued, or inside a transaction. TypeORM releases its query runners without
 * an error even when a ROLLBACK failed, so after a `query_timeout` (a database that accepts but
 * does not answer) a client could return with its BEGIN still in flight; once the database
 * answered again, the next autocommit statement on it (a charge, a mint) would run inside that
 * forgotten transaction and never commit. Ending such a client destroys its socket (pg does so
 * when a query is active), which ends the transaction on the server too.
 */
export function discardUnsafeReleases(pool: Pool): void {
  if (guarded.has(pool)) return;
  guarded.add(pool);
  pool.on('release', (err: Error | undefined, client: PoolClient) => {
    if (err) return; // the pool removes it already
    const c = client as PooledClient;
    const busy = Boolean(c._getActiveQuery?.()) || (c._queryQueue?.length ?? 0) > 0;
    const inTransaction = c._txStatus === 'T' || c._txStatus === 'E';
    // end() marks the client as ending at once, so the pool removes it instead of keeping it idle.
    if (busy || inTransaction) void c.end().catch(() => undefined);
  });
}
