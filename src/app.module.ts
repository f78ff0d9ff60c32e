import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { DataSource, DataSourceOptions } from 'typeorm';
import { AccountModule } from './account/account.module.js';
import type { Clock } from './common/clock.js';
import type { AppConfig } from './config/app-config.js';
import { KeysUsageIdentityModule } from './core/keys-usage-identity.module.js';
import { HttpExceptionFilter } from './http/http-exception.filter.js';

export interface AppModuleOptions {
  config: AppConfig;
  /** Builds and initialises the data source (migrations included); see database/open-database.ts. */
  dataSource: () => Promise<DataSource>;
  clock?: Clock;
  mountControllers?: boolean;
}

/**
 * The standalone service: this repo is itself a host of KeysUsageIdentityModule. Only here are
 * app-wide concerns (the exception filter) registered.
 */
@Module({})
export class AppModule {
  static register(options: AppModuleOptions): DynamicModule {
    const { config } = options;
    return {
      module: AppModule,
      imports: [
        TypeOrmModule.forRootAsync({
          useFactory: () => ({}) as DataSourceOptions,
          dataSourceFactory: () => options.dataSource(),
        }),
        KeysUsageIdentityModule.forRoot({
          apiKeySecret: config.env.API_KEY_SECRET ?? null,
          session: {
            secret: config.env.SESSION_JWT_SECRET,
            publicKey: config.env.SESSION_JWT_PUBLIC_KEY,
            jwksUri: config.env.SESSION_JWT_JWKS_URI,
            issuer: config.env.SESSION_JWT_ISSUER,
            audience: config.env.SESSION_JWT_AUDIENCE,
          },
          planLimits: config.planLimits,
          authFailureLimit: config.env.AUTH_FAILURE_LIMIT,
          clock: options.clock,
          mountControllers: options.mountControllers ?? true,
        }),
        AccountModule,
      ],
      providers: [{ provide: APP_FILTER, useClass: HttpExceptionFilter }],
    };
  }
}
