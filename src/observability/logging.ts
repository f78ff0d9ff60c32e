import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Params } from 'nestjs-pino';
import {
  pino,
  stdTimeFunctions,
  type DestinationStream,
  type LevelWithSilent,
  type Logger,
  type LoggerOptions,
} from 'pino';
import type { AppConfig } from '../config/app-config.js';
import { clientRequestIdOf, loggablePath, principalIds, routeOf } from '../common/request-context.js';

export interface LoggingOptions {
  /** Where log lines go (tests capture them); default stdout. */
  destination?: DestinationStream;
  /** No log lines at all (tests that do not look at logs). */
  silent?: boolean;
}

/** Routes probed every few seconds: their successful requests log at debug, not info. */
const QUIET_ROUTES = new Set(['/health/live', '/health/ready', '/metrics']);

/**
 * Anything secret that could reach a log object. Request lines carry no headers at all
 * (see requestLine); this is the second line of defence for objects logged by hand.
 */
export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'cookie',
  '*.cookie',
  '*.headers.cookie',
  'key',
  '*.key',
  'token',
  '*.token',
  'secret',
  '*.secret',
  'password',
  '*.password',
  'apiKeySecret',
  '*.apiKeySecret',
  'API_KEY_SECRET',
  'SESSION_JWT_SECRET',
  'METRICS_TOKEN',
  '*.METRICS_TOKEN',
];

/**
 * One line per request, written from a Fastify onResponse hook with the app's own pino logger:
 * ids, route template, status and duration; never headers, query or body. (pino-http as a Nest
 * middleware did the same at twice the cost of the whole API-key path: a child logger, an
 * AsyncLocalStorage context and a middleware pass per request; see bench/README.md.)
 */
export function logRequest(logger: Logger, request: FastifyRequest, reply: FastifyReply): void {
  const status = reply.statusCode;
  const route = routeOf(request);
  const level: LevelWithSilent = status >= 500 ? 'error' : status < 400 && QUIET_ROUTES.has(route) ? 'debug' : 'info';
  if (!logger.isLevelEnabled(level)) return;
  const clientRequestId = clientRequestIdOf(request.headers);
  logger[level as 'info'](
    {
      // The service's own id; the caller's X-Request-Id, if any, beside it.
      request_id: request.id,
      ...(clientRequestId === null ? {} : { client_request_id: clientRequestId }),
      method: request.method,
      route,
      path: loggablePath(request.raw),
      status,
      // After the TRUST_PROXY rules (Fastify's request.ip): the address the throttle counts.
      client: request.ip,
      duration_ms: Math.round(reply.elapsedTime * 100) / 100,
      ...principalIds(request),
    },
    status >= 500 ? 'request failed' : 'request completed',
  );
}

export interface Logging {
  /** nestjs-pino's parameters: the Nest logger writes through `logger`. */
  params: Params;
  /** The app's pino logger, for request lines. */
  logger: Logger;
}

/**
 * The app's pino logger (JSON lines in production, pino-pretty in development; LOG_FORMAT
 * overrides; LOG_LEVEL) and nestjs-pino's parameters so that Nest's own logs go through it.
 * nestjs-pino's request middleware is not mounted (`forRoutes: []`): request lines come from
 * `logRequest`. nestjs-pino keeps one root logger per process, so in a process that creates
 * several apps (tests) Nest's own lines follow the first app's settings; request lines do not.
 */
export async function createLogging(config: AppConfig, options: LoggingOptions = {}): Promise<Logging> {
  const format = config.env.LOG_FORMAT ?? (config.env.NODE_ENV === 'development' ? 'pretty' : 'json');
  const pinoOptions: LoggerOptions = {
    level: options.silent ? 'silent' : config.env.LOG_LEVEL,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
  };
  if (format === 'json') {
    pinoOptions.timestamp = stdTimeFunctions.isoTime;
    pinoOptions.formatters = { level: (label) => ({ level: label }) };
  }
  let destination = options.destination;
  if (format === 'pretty' && !options.silent) {
    // Loaded only when asked for: production images never touch it.
    const { default: pretty } = await import('pino-pretty');
    destination = pretty({
      destination: options.destination ?? 1,
      colorize: options.destination ? false : process.stdout.isTTY,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,method,path,status,duration_ms',
      singleLine: true,
      sync: true,
      // Request lines read as "GET /me 200 3ms {request_id, route, ids}".
      messageFormat: (log, messageKey) =>
        log.method
          ? `${log.method as string} ${String(log.path)} ${String(log.status)} ${Math.round(Number(log.duration_ms))}ms`
          : String(log[messageKey]),
    });
  }
  const logger = destination ? pino(pinoOptions, destination) : pino(pinoOptions);
  return { logger, params: { pinoHttp: { logger }, forRoutes: [] } };
}
