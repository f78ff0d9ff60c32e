import { buildAppConfig, loadEnvironment, type AppConfig } from '../../src/config/app-config.js';
import { TEST_API_KEY_SECRET, TEST_SESSION_SECRET } from './seed.js';

/** The settings every test app and test data source starts from; `env` adds or overrides variables. */
export function testConfig(dbUrl: string, env: Record<string, string | undefined> = {}): AppConfig {
  return buildAppConfig(
    loadEnvironment({
      NODE_ENV: 'test',
      DATABASE_URL: dbUrl,
      SESSION_JWT_SECRET: TEST_SESSION_SECRET,
      API_KEY_SECRET: TEST_API_KEY_SECRET,
      AUTH_FAILURE_LIMIT: '100000',
      MINT_RATE_LIMIT: '100000',
      // Tests read counters right after the requests that move them: no cached render.
      METRICS_CACHE_MS: '0',
      DB_POOL_MAX: '4',
      DB_MIGRATE: 'false',
      // `USAGE_CHARGING=exact npx vitest run …` runs the same tests on the exact charging path.
      ...(process.env.USAGE_CHARGING ? { USAGE_CHARGING: process.env.USAGE_CHARGING } : {}),
      ...env,
    }),
  );
}
