import 'reflect-metadata';
import { Logger, type LoggerService, type LogLevel, type NestApplicationOptions } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Logger as PinoNestLogger } from 'nestjs-pino';
import type { DestinationStream } from 'pino';
import type { DataSource } from 'typeorm';
import { AppModule } from './app.module.js';
import type { Clock } from './common/clock.js';
import { ConfigError, type AppConfig } from './config/app-config.js';
import { openDatabase } from './database/open-database.js';
import { buildOpenApiDocument, setupOpenApi } from './http/openapi.js';
import { deferJsonErrors } from './http/deferred-body.js';
import {
  applySocketLimits,
  defaultMaxConnections,
  fastifySocketOptions,
  releaseUnusedConnectionsOnClose,
  type SocketLimits,
} from './http/socket-limits.js';
import { answerUnsupportedExpectations, clientErrorHandler, frameworkErrors } from './http/protocol-errors.js';
import { MetricsService } from './metrics/metrics.service.js';
import { createLogging, logRequest, type Logging } from './observability/logging.js';
import { REQUEST_ID_FIELD, newRequestId, routeOf } from './common/request-context.js';
import { Settings } from './settings/settings.js';
import { installVersioning, operationIdsByRoute } from './http/versioning-hooks.js';
import { VersionEdge } from './versioning/version-edge.js';
import { GITHUB_REPORT_BODY_LIMIT, GITHUB_SCANNING_PATH } from './leaks/leaked-keys.controller.js';

export const BODY_LIMIT_BYTES = 16 * 1024;

export interface CreateAppOptions {
  clock?: Clock;
  /**
   * Nest's logger. Unset: pino (nestjs-pino) for everything, request lines included.
   * `false`: silent, request lines included. A LoggerService or levels: Nest logs go there,
   * request lines still go to pino.
   */
  logger?: LoggerService | LogLevel[] | false;
  /** Where pino writes (tests capture log lines); default stdout. */
  logDestination?: DestinationStream;
  /** Tests may hand in an already open data source. */
  dataSource?: () => Promise<DataSource>;
}

/**
 * TRUST_PROXY: unset/false, true (trust every hop), a hop count (`1`: the nearest proxy appends
 * the client), or comma-separated addresses / CIDRs of your proxies. Fastify applies it
 * (proxy-addr), so the client is the nearest untrusted hop and appended entries cannot steer it.
 */
function trustProxy(value: string | undefined): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (!value || value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d{1,2}$/.test(value.trim())) {
    // Hop count, as proxy-addr reads a number: trust the socket peer and the next n-1 hops.
    const hops = Number(value.trim());
    return (_address: string, hop: number) => hop < hops;
  }
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The socket limits of the standalone server, from the environment. */
export function socketLimitsFrom(config: AppConfig): SocketLimits {
  const env = config.env;
  return {
    headersTimeoutMs: env.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: env.HTTP_REQUEST_TIMEOUT_MS,
    idleTimeoutMs: env.HTTP_IDLE_TIMEOUT_MS,
    keepAliveTimeoutMs: env.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    maxConnections: env.HTTP_MAX_CONNECTIONS ?? defaultMaxConnections(),
  };
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

/** The standalone server's Fastify adapter: body limit, socket timeouts, proxies, request ids, refusals below Nest. */
export function createAdapter(config: AppConfig): FastifyAdapter {
  return new FastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    // Header, request, idle and keep-alive timeouts that destroy the socket (see socket-limits.ts).
    ...fastifySocketOptions(socketLimitsFrom(config)),
    trustProxy: trustProxy(config.env.TRUST_PROXY),
    // Refuse bodies that try to pollute prototypes rather than silently dropping the keys.
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // Always the service's own id; a caller's X-Request-Id is logged and audited beside it (request-context.ts).
    genReqId: newRequestId,
    // Requests refused below Nest (bad bytes, bad URLs) get the same error shape and headers.
    frameworkErrors,
    clientErrorHandler,
  });
}

/** Nest's application options for the standalone app, given CreateAppOptions.logger. */
export function applicationOptions(logger: CreateAppOptions['logger']): NestApplicationOptions {
  const pino = logger === undefined;
  // bodyParser false: Fastify's own JSON parser only, so a form-encoded body is a 415, not a mint.
  return { logger: pino ? undefined : logger, bufferLogs: pino, abortOnError: false, bodyParser: false };
}

/**
 * Everything the standalone app sets up on a created (not yet initialised) application: the
 * logger, body limits and parsers, socket limits, the headers every reply carries, request lines
 * and metrics, OpenAPI, shutdown hooks. main (through createApp) and the HTTP tests (through
 * @nestjs/testing) both call it, so tests run the app as it is served.
 */
export function configureApp(
  app: NestFastifyApplication,
  config: AppConfig,
  logging: Logging,
  logger: CreateAppOptions['logger'],
): void {
  if (logger === undefined) app.useLogger(app.get(PinoNestLogger));
  const metrics = app.get(MetricsService);
  const edge = app.get(VersionEdge);
  const clock = app.get(Settings).clock;
  const openApi = buildOpenApiDocument(app, { metricsToken: Boolean(config.env.METRICS_TOKEN) });
  const fastify = app.getHttpAdapter().getInstance();
  // Routes are added at init, after this hook: GitHub's scanning reports (up to 1,000 tokens) get
  // their own body limit; every other route keeps BODY_LIMIT_BYTES.
  fastify.addHook('onRoute', (route) => {
    if (route.url === GITHUB_SCANNING_PATH) route.bodyLimit = GITHUB_REPORT_BODY_LIMIT;
  });
  fastify.removeContentTypeParser('text/plain');
  deferJsonErrors(fastify);
  applySocketLimits(fastify.server, socketLimitsFrom(config), (message) => new Logger('HttpServer').warn(message));
  answerUnsupportedExpectations(fastify.server);
  releaseUnusedConnectionsOnClose(fastify.server, (hook) => fastify.addHook('preClose', hook));
  // Api-Version refusals, and the routes a version change or deprecation touches (versioning-hooks.ts).
  const versioned = installVersioning(fastify, edge, operationIdsByRoute(openApi));
  // Callback-style hooks: they run on every request, and async hooks cost a promise each.
  // One hook for every header we stamp (each hook is a step on every request): every reply goes
  // through onSend, errors and refusals below Nest included.
  // Names in lower case, as Fastify sends them: a name with capitals costs a fresh lower-cased
  // string and a lookup of it on every call.
  fastify.addHook('onSend', (request, reply, payload, done) => {
    reply.header(REQUEST_ID_FIELD, request.id);
    reply.header('x-content-type-options', 'nosniff');
    // Keys are minted in response bodies: nothing here may be cached by a browser or a proxy.
    // (The /docs assets set their own Cache-Control and keep it.)
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    // Every answer names the version it was served with (the org's pin: from memory, read on a miss).
    versioned(request, reply, payload, done);
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    metrics.observeHttp(request.method, routeOf(request), reply.statusCode, reply.elapsedTime / 1000);
    logRequest(logging.logger, request, reply);
    done();
  });
  setupOpenApi(app, openApi, edge.policy, clock.now());
  app.enableShutdownHooks();
}

/** The standalone service on Fastify, ready to `listen`. */
export async function createApp(config: AppConfig, options: CreateAppOptions = {}): Promise<NestFastifyApplication> {
  assertStartable(config);
  const logging = await createLogging(config, {
    destination: options.logDestination,
    silent: options.logger === false,
  });
  // The database is opened before Nest starts: a permanent failure (wrong password, no such
  // database) is then one line from main, not a flush of Nest's buffered logs and a stack trace.
  // Retries of a database that is not up yet go to the log with their delay (JSON in production).
  const warn = (message: string) => logging.logger.warn(message);
  const dataSource = await (
    options.dataSource ?? (() => openDatabase(config, 'server', undefined, { onRetry: warn }, warn))
  )();
  let app: NestFastifyApplication;
  try {
    app = await NestFactory.create<NestFastifyApplication>(
      AppModule.register({
        config,
        clock: options.clock,
        dataSource: () => Promise.resolve(dataSource),
        logging: logging.params,
      }),
      createAdapter(config),
      applicationOptions(options.logger),
    );
  } catch (error) {
    await dataSource.destroy().catch(() => undefined);
    throw error;
  }
  configureApp(app, config, logging, options.logger);
  return app;
}
