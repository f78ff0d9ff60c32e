import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, type DataSourceOptions } from 'typeorm';
import type { Clock } from '../../src/common/clock.js';
import type { KeysUsageIdentityModuleOptions } from '../../src/core/keys-usage-identity.module-definition.js';
import { KeysUsageIdentityModule } from '../../src/core/keys-usage-identity.module.js';
import { postgresOptions } from '../../src/database/data-source-options.js';
import type { TestDatabase } from './database.js';
import { ApiClient } from './http.js';
import { TEST_API_KEY_SECRET, TEST_SESSION_SECRET } from './seed.js';
import { testConfig } from './test-config.js';

export interface ChargingHost {
  app: NestFastifyApplication;
  api: ApiClient;
  close(): Promise<void>;
}

/**
 * A host application on Fastify, built with Nest's testing module, whose own controllers charge
 * the org's meters with `@Charges`: the module with the test secrets and clock on the test
 * database, plus `options` (plan limits, usage settings). For tests of charging through a host
 * route; test/host/support/host-app.ts is the full host (both adapters, async options).
 */
export async function startChargingHost(
  db: TestDatabase,
  clock: Clock,
  controllers: Array<Type<unknown>>,
  options: Partial<KeysUsageIdentityModuleOptions> = {},
): Promise<ChargingHost> {
  const config = testConfig(db.url);

  @Module({})
  class ChargingHostModule {
    static register(): DynamicModule {
      return {
        module: ChargingHostModule,
        imports: [
          TypeOrmModule.forRootAsync({
            useFactory: () => ({}) as DataSourceOptions,
            dataSourceFactory: () => new DataSource(postgresOptions(config, db.url)).initialize(),
          }),
          KeysUsageIdentityModule.forRoot({
            apiKeySecret: TEST_API_KEY_SECRET,
            session: { secret: TEST_SESSION_SECRET },
            clock,
            ...options,
            // `USAGE_CHARGING=exact npx vitest run …` runs the same tests on the exact charging path.
            usage: { charging: config.env.USAGE_CHARGING, ...options.usage },
          }),
        ],
        controllers,
      };
    }
  }

  const moduleRef = await Test.createTestingModule({ imports: [ChargingHostModule.register()] }).compile();
  const app = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  return { app, api: new ApiClient(`http://127.0.0.1:${port}`), close: () => app.close() };
}
