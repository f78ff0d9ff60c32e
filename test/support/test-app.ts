import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { LoggerService } from '@nestjs/common';
import type { DestinationStream } from 'pino';
import { DataSource } from 'typeorm';
import { Test } from '@nestjs/testing';
import { AppModule } from '../../src/app.module.js';
import { applicationOptions, assertStartable, configureApp, createAdapter } from '../../src/bootstrap.js';
import type { Clock } from '../../src/common/clock.js';
import type { AppConfig } from '../../src/config/app-config.js';
import { postgresOptions } from '../../src/database/data-source-options.js';
import { createLogging } from '../../src/observability/logging.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { ApiClient } from './http.js';
import { Seeder } from './seed.js';
import { testConfig } from './test-config.js';
import { VersioningPolicy } from '../../src/versioning/versioning-policy.js';

export { testConfig };

export interface TestApp {
  app: NestFastifyApplication;
  url: string;
  api: ApiClient;
  db: TestDatabase;
  seed: Seeder;
  config: AppConfig;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string | undefined>;
  clock?: Clock;
  /** Share a database with another app (two instances); by default each app gets a fresh one. */
  db?: TestDatabase;
  logger?: LoggerService | false;
  /** Send the app's own pino logger (not a silent one) into this stream, e.g. a LogCapture. */
  logDestination?: DestinationStream;
  /** The API versions, changes and deprecations served (default: the service's own). */
  versioning?: VersioningPolicy;
}

/**
 * The real standalone app on a real PostgreSQL database, listening on an ephemeral port. Built the
 * way Nest's testing package builds an app (Test.createTestingModule, then createNestApplication)
 * from the same AppModule, adapter, options and setup (configureApp) as the served app.
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const db = options.db ?? (await createTestDatabase());
  // TEST_DATABASE_POOLER=host:port (npm run test:ha): the app's DATABASE_URL goes through a
  // transaction pooler in front of the test server, and DATABASE_DIRECT_URL straight to it.
  const pooled = pooledUrl(db.url);
  const config = testConfig(pooled ?? db.url, {
    ...(pooled ? { DATABASE_DIRECT_URL: db.url } : {}),
    ...options.env,
  });
  assertStartable(config);
  // With a log destination the app's own logger writes there; otherwise tests run silent.
  const logger = options.logDestination ? options.logger : (options.logger ?? false);
  const logging = await createLogging(config, { destination: options.logDestination, silent: logger === false });
  const builder = Test.createTestingModule({
    imports: [
      AppModule.register({
        config,
        clock: options.clock,
        dataSource: () =>
          new DataSource(postgresOptions(config, pooled ?? db.url, undefined, pooled !== null)).initialize(),
        logging: logging.params,
      }),
    ],
  });
  if (options.versioning) builder.overrideProvider(VersioningPolicy).useValue(options.versioning);
  const moduleRef = await builder.compile();
  const app = moduleRef.createNestApplication<NestFastifyApplication>(
    createAdapter(config),
    applicationOptions(logger),
  );
  configureApp(app, config, logging, logger);
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  const url = `http://127.0.0.1:${address.port}`;
  return {
    app,
    url,
    api: new ApiClient(url),
    db,
    seed: new Seeder(db.pool),
    config,
    close: async () => {
      await app.close();
      if (!options.db) await db.drop();
    },
  };
}

/** `url` through the pooler named by TEST_DATABASE_POOLER (host:port), or null without one. */
function pooledUrl(url: string): string | null {
  const pooler = process.env.TEST_DATABASE_POOLER;
  if (!pooler) return null;
  const u = new URL(url);
  u.host = pooler;
  return u.toString();
}
