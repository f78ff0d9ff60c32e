import { MigrationExecutor, type DataSource } from 'typeorm';

// Any constant works; it only has to be the same for every instance sharing the database.
const MIGRATION_LOCK_KEY = 724_113_2001;

/**
 * Runs pending migrations while holding a PostgreSQL advisory lock, so several instances
 * starting together migrate once and the others wait, then find nothing to do.
 * The lock is taken on the same connection the migrations run on (a pool of one is enough).
 */
export async function runMigrationsLocked(dataSource: DataSource): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      const executor = new MigrationExecutor(dataSource, runner);
      executor.transaction = 'each';
      const done = await executor.executePendingMigrations();
      return done.map((m) => m.name);
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    await runner.release();
  }
}
