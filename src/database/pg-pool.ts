import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';

/**
 * The node-postgres pool behind a TypeORM DataSource: TypeORM's PostgresDriver keeps it as
 * `master`, typed `any`. The one place that reaches into the driver; hot paths run named
 * statements on this pool, off TypeORM's entity path. Undefined before the DataSource is
 * initialised or for a driver that is not PostgreSQL.
 */
export function pgPoolOf(dataSource: DataSource): Pool | undefined {
  const driver: unknown = dataSource.driver;
  if (dataSource.options?.type !== 'postgres' || typeof driver !== 'object' || driver === null || !('master' in driver)) return undefined;
  return (driver.master ?? undefined) as Pool | undefined;
}

/** As pgPoolOf, for code that runs only once the DataSource is open: a missing pool is a bug. */
export function pgPool(dataSource: DataSource): Pool {
  const pool = pgPoolOf(dataSource);
  if (!pool) throw new Error('The DataSource has no PostgreSQL pool: is it initialised, and of type postgres?');
  return pool;
}
