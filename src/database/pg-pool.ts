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

/** What a pool behind a transaction pooler may not do, and what it must carry per transaction instead. */
export interface TransactionPoolerAdaptation {
  /** false: named statements run unnamed (a transaction pooler may hand the next one to a server that never prepared it). */
  namedStatements: boolean;
  /** Set: each BEGIN / START TRANSACTION also sets these for its transaction (ms), in the same round trip. */
  transactionTimeouts: { statementMs: number; idleInTransactionMs: number } | null;
}

type QueryFn = (config: unknown, values?: unknown, callback?: unknown) => unknown;
const adapted = new WeakSet<Pool>();
const TRANSACTION_START = /^\s*(BEGIN|START\s+TRANSACTION)\b[^;]*;?\s*$/i;

/**
 * Adapts the clients of `pool`, those open now and every one it opens later, to a transaction
 * pooler (PgBouncer `pool_mode = transaction`, RDS Proxy, Supavisor):
 * - a query config's `name` is dropped when named statements are off, so the statement is
 *   parsed in the transaction that runs it (the hot paths name theirs; see DatabaseOptions);
 * - a transaction's start carries `SET LOCAL statement_timeout` and
 *   `idle_in_transaction_session_timeout`: through a pooler that refuses startup parameters
 *   this is how the server-side bounds still apply, and SET LOCAL ends with the transaction, so
 *   nothing leaks to the next client of that server connection. A single statement outside a
 *   transaction is bounded by the pool's client-side `query_timeout` (the connection is then
 *   discarded, see discardUnsafeReleases, and the pooler closes its server connection).
 * Idempotent per pool. Nothing to do (and nothing done) when both are as PostgreSQL itself allows.
 */
export function adaptToTransactionPooler(pool: Pool, adaptation: TransactionPoolerAdaptation): void {
  if (adaptation.namedStatements && !adaptation.transactionTimeouts) return;
  if (adapted.has(pool)) return;
  adapted.add(pool);
  const timeouts = adaptation.transactionTimeouts;
  const suffix = timeouts
    ? `; SET LOCAL statement_timeout = ${Math.trunc(timeouts.statementMs)}; ` +
      `SET LOCAL idle_in_transaction_session_timeout = ${Math.trunc(timeouts.idleInTransactionMs)}`
    : null;
  const adapt = (client: PoolClient) => {
    const c = client as unknown as { query: QueryFn; kuiAdapted?: true };
    if (c.kuiAdapted) return;
    c.kuiAdapted = true;
    const query = c.query.bind(c);
    c.query = (config: unknown, values?: unknown, callback?: unknown) => {
      if (!adaptation.namedStatements && isNamedConfig(config)) {
        const { name: _name, ...unnamed } = config;
        return query(unnamed, values, callback);
      }
      const noValues =
        values === undefined || typeof values === 'function' || (Array.isArray(values) && !values.length);
      if (suffix && typeof config === 'string' && noValues && TRANSACTION_START.test(config)) {
        // Several statements in one simple query: the answer is one result each; the caller asked for the first.
        const text = `${config.trim().replace(/;$/, '')}${suffix}`;
        const done = typeof callback === 'function' ? callback : typeof values === 'function' ? values : null;
        if (done)
          return query(text, undefined, (err: unknown, res: unknown) =>
            (done as (e: unknown, r: unknown) => void)(err, firstResult(res)),
          );
        return (query(text) as Promise<unknown>).then(firstResult);
      }
      return query(config, values, callback);
    };
  };
  pool.on('connect', adapt);
  for (const client of (pool as Pool & { _clients?: PoolClient[] })._clients ?? []) adapt(client);
}

const firstResult = (res: unknown): unknown => (Array.isArray(res) ? (res as unknown[])[0] : res);

function isNamedConfig(config: unknown): config is { name: string; [k: string]: unknown } {
  if (typeof config !== 'object' || config === null) return false;
  const c = config as { name?: unknown; submit?: unknown };
  return typeof c.name === 'string' && c.name !== '' && typeof c.submit !== 'function';
}
