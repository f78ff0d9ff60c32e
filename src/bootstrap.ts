import 'reflect-metadata';
import { Logger, type LoggerService, type LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { DataSource } from 'typeorm';
import { AppModule } from './app.module.js';
import type { Clock } from './common/clock.js';
import { ConfigError, type AppConfig } from './config/app-config.js';
import { openDatabase } from './database/open-database.js';

export const BODY_LIMIT_BYTES = 16 * 1024;

export interface CreateAppOptions {
  clock?: Clock;
  logger?: LoggerService | LogLevel[] | false;
  /** Tests may hand in an already open data source. */
  dataSource?: () => Promise<DataSource>;
}

/** TRUST_PROXY: unset/false, true (trust every hop), or comma-separated addresses / CIDRs of your proxies. */
function trustProxy(value: string | undefined): boolean | string[] {
  if (!value || value === 'false') return false;
  if (value === 'true') return true;
  return value.split(',').map((s) => s.trim()).filter(Boolean);
}

/** Fails fast on settings that only make sense together. */
export function assertStartable(config: AppConfig): void {
  const env = config.env;
  if (!env.SESSION_JWT_SECRET && !env.SESSION_JWT_PUBLIC_KEY && !env.SESSION_JWT_JWKS_URI) {
    throw new ConfigError(
      'Invalid configuration:\n  SESSION_JWT_SECRET: required (or SESSION_JWT_PUBLIC_KEY / SESSION_JWT_JWKS_URI) to verify browser sessions',
    );
  }
}

/** The standalone service on Fastify, ready to `listen`. */
export async function createApp(config: AppConfig, options: CreateAppOptions = {}): Promise<NestFastifyApplication> {
  assertStartable(config);
  const adapter = new FastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: trustProxy(config.env.TRUST_PROXY),
    // Refuse bodies that try to pollute prototypes rather than silently dropping the keys.
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
  });
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.register({
      config,
      clock: options.clock,
      dataSource: options.dataSource ?? (() => openDatabase(config, 'server')),
    }),
    adapter,
    { logger: options.logger ?? new Logger(), bufferLogs: false, abortOnError: false },
  );
  const fastify = app.getHttpAdapter().getInstance();
  fastify.addHook('onSend', async (_request, reply, payload) => {
    reply.header('X-Content-Type-Options', 'nosniff');
    // Keys are minted in response bodies: nothing here may be cached by a browser or a proxy.
    if (!reply.hasHeader('Cache-Control')) reply.header('Cache-Control', 'no-store');
    reply.removeHeader('X-Powered-By');
    return payload;
  });
  app.enableShutdownHooks();
  return app;
}
