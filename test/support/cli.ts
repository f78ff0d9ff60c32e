import { afterAll, beforeAll } from 'vitest';
import { createSeededDatabase, type TestDatabase } from './database.js';
import { runCli, type CliResult } from './processes.js';
import { TEST_API_KEY_SECRET, TEST_SESSION_SECRET, type Seeder } from './seed.js';

/** The environment the operator CLI runs with against a test database: the tests' secrets, no migrations. */
export function cliEnv(databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    NODE_ENV: 'test',
    SESSION_JWT_SECRET: TEST_SESSION_SECRET,
    API_KEY_SECRET: TEST_API_KEY_SECRET,
    DB_MIGRATE: 'false',
    ...extra,
  };
}

export interface CliDatabase {
  readonly db: TestDatabase;
  readonly seed: Seeder;
  /** Runs the built CLI with `args` against this database. */
  cli(...args: string[]): Promise<CliResult>;
}

/** A fresh seeded database for the enclosing describe block, and the built CLI pointed at it. */
export function useCliDatabase(): CliDatabase {
  let opened: { db: TestDatabase; seed: Seeder } | undefined;
  beforeAll(async () => {
    opened = await createSeededDatabase();
  });
  afterAll(async () => opened?.db.drop());
  const need = () => {
    if (!opened) throw new Error('useCliDatabase: used outside a test of its describe block');
    return opened;
  };
  return {
    get db() {
      return need().db;
    },
    get seed() {
      return need().seed;
    },
    cli: (...args) => runCli(args, cliEnv(need().db.url)),
  };
}
