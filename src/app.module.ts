import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { TypeOrmModule, type TypeOrmModuleOptions } from '@nestjs/typeorm';
import { LoggerModule, type Params as LoggerParams } from 'nestjs-pino';
import type { DataSource } from 'typeorm';
import { AccountModule } from './account/account.module.js';
import type { Clock } from './common/clock.js';
import { moduleOptionsFrom, parsePortRanges, type AppConfig } from './config/app-config.js';
import { KeysUsageIdentityModule } from './core/keys-usage-identity.module.js';
import { HealthModule } from './health/health.module.js';
import { HttpExceptionFilter } from './http/http-exception.filter.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { EMBEDDED_SOCKET_PORT } from './database/embedded.js';
import type { EventsSettings } from './webhooks/events-settings.js';
import { LeaksModule } from './leaks/leaks.module.js';
import { EventsModule } from './webhooks/events.module.js';
import { PersonalDataModule } from './personal-data/personal-data.module.js';

/**
 * Events out, from the environment. pg-boss gets its own connection: DATABASE_URL, or
 * on the embedded database the server's Unix socket (the app's pool there is one connection, which
 * a queue's polling must never hold).
 */
export function eventsSettingsFrom(config: AppConfig): EventsSettings {
  const env = config.env;
  return {
    queue: env.DATABASE_URL
      ? { connectionString: env.DATABASE_URL }
      : { host: config.dataDir, port: EMBEDDED_SOCKET_PORT, user: 'postgres', database: 'postgres' },
    queuePoolMax: env.EVENTS_QUEUE_POOL_MAX,
    worker: env.EVENTS_WORKER,
    pollIntervalMs: env.EVENTS_POLL_INTERVAL_MS,
    retryLimit: env.WEBHOOK_RETRY_LIMIT,
    retryDelaySeconds: env.WEBHOOK_RETRY_DELAY_SECONDS,
    retryDelayMaxSeconds: env.WEBHOOK_RETRY_DELAY_MAX_SECONDS,
    timeoutMs: env.WEBHOOK_TIMEOUT_MS,
    httpsOnly: config.production,
    allowCidrs: (env.WEBHOOK_ALLOW_CIDRS ?? '')
      .split(',')
      .map((c) => c.trim())
      .filter(Boolean),
    // An allowed CIDR opens addresses, not every port on them.
    allowedPorts: env.WEBHOOK_ALLOWED_PORTS
      ? parsePortRanges(env.WEBHOOK_ALLOWED_PORTS)
      : config.production
        ? [[443, 443]]
        : [
            [443, 443],
            [80, 80],
          ],
    maxEndpointsPerOrg: env.WEBHOOK_MAX_ENDPOINTS_PER_ORG,
    sendRatePerMinute: env.WEBHOOK_SEND_RATE_LIMIT,
    orgConcurrency: env.WEBHOOK_ORG_CONCURRENCY,
    expiryScanCron: env.EVENTS_EXPIRY_SCAN_CRON,
  };
}

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
        EventsModule.register({ events: eventsSettingsFrom(config) }),
        LeaksModule.register({
          githubKeys: config.githubScanningKeys,
          reportLimit: config.env.CREDENTIALS_REVOKE_LIMIT,
        }),
        // The operator's routes (ADMIN_API_TOKEN): here only, never in the library's module.
        PersonalDataModule.withHttp({ adminToken: config.env.ADMIN_API_TOKEN }),
        AccountModule,
        HealthModule,
        MetricsModule.register({
          token: config.env.METRICS_TOKEN,
          port: config.env.METRICS_PORT,
          host: config.env.METRICS_HOST,
          renderCacheMs: config.env.METRICS_CACHE_MS,
          allowLoopback: config.env.METRICS_ALLOW_LOOPBACK ?? !config.production,
        }),
      ],
      providers: [{ provide: APP_FILTER, useClass: HttpExceptionFilter }],
    };
  }
}
