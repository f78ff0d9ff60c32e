import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { TypeOrmModule, type TypeOrmModuleOptions } from '@nestjs/typeorm';
import { LoggerModule, type Params as LoggerParams } from 'nestjs-pino';
import type { DataSource } from 'typeorm';
import { AccountModule } from './account/account.module.js';
import type { Clock } from './common/clock.js';
import { moduleOptionsFrom, type AppConfig } from './config/app-config.js';
import { KeysUsageIdentityModule } from './core/keys-usage-identity.module.js';
import { HealthModule } from './health/health.module.js';
import { HttpExceptionFilter } from './http/http-exception.filter.js';
import { MetricsModule } from './metrics/metrics.module.js';

export interface AppModuleOptions {
  config: AppConfig;
  /** Builds and initialises the data source (migrations included); see database/open-database.ts. */
  dataSource: () => Promise<DataSource>;
  clock?: Clock;
  mountControllers?: boolean;
  /** nestjs-pino parameters (see observability/logging.ts). */
  logging: LoggerParams;
}

/**
 * The standalone service: this repo is itself a host of KeysUsageIdentityModule. Only here are
 * app-wide concerns registered: the exception filter, request logging, health probes, metrics.
 */
@Module({})
export class AppModule {
  static register(options: AppModuleOptions): DynamicModule {
    const { config } = options;
    return {
      module: AppModule,
      imports: [
        LoggerModule.forRoot(options.logging),
        TypeOrmModule.forRootAsync({
          // openDatabase retries what can heal and fails fast on the rest; no second retry loop here.
          useFactory: (): TypeOrmModuleOptions => ({ toRetry: () => false }),
          dataSourceFactory: () => options.dataSource(),
        }),
        KeysUsageIdentityModule.forRoot({
          ...moduleOptionsFrom(config),
          clock: options.clock,
          mountControllers: options.mountControllers ?? true,
        }),
        AccountModule,
        HealthModule,
        MetricsModule.register({ token: config.env.METRICS_TOKEN, port: config.env.METRICS_PORT, host: config.env.METRICS_HOST, renderCacheMs: config.env.METRICS_CACHE_MS }),
      ],
      providers: [{ provide: APP_FILTER, useClass: HttpExceptionFilter }],
    };
  }
}
