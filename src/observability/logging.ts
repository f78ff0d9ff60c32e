import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestMethod } from '@nestjs/common';
import type { Params } from 'nestjs-pino';
import { stdTimeFunctions, type DestinationStream, type LevelWithSilent } from 'pino';
import type { Options } from 'pino-http';
import type { AppConfig } from '../config/app-config.js';
import { fastifyRequestOf, loggablePath, principalIds, requestIdFor, routeOf } from './request-context.js';

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
  'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization',
  'cookie', '*.cookie', '*.headers.cookie',
  'key', '*.key', 'token', '*.token', 'secret', '*.secret', 'password', '*.password',
  'apiKeySecret', '*.apiKeySecret', 'API_KEY_SECRET', 'SESSION_JWT_SECRET', 'METRICS_TOKEN', '*.METRICS_TOKEN',
];

/** One line per request: ids, route template, status and duration; never headers, query or body. */
function requestLine(req: IncomingMessage, res: ServerResponse, responseTime: number): Record<string, unknown> {
  const request = fastifyRequestOf(req);
  return {
    method: req.method,
    route: routeOf(request),
    path: loggablePath(req),
    status: res.statusCode,
    duration_ms: responseTime,
    ...principalIds(request),
  };
}

function level(req: IncomingMessage, res: ServerResponse, error?: Error): LevelWithSilent {
  if (error || res.statusCode >= 500) return 'error';
  if (res.statusCode < 400 && QUIET_ROUTES.has(routeOf(fastifyRequestOf(req)))) return 'debug';
  return 'info';
}

/**
 * nestjs-pino's parameters: JSON lines in production, pino-pretty in development
 * (LOG_FORMAT overrides), LOG_LEVEL, request ids from X-Request-Id (see request-context.ts).
 * nestjs-pino builds its pino-http instance once per process, so the first app created in a
 * process fixes the logging configuration for any later one (a test concern only).
 */
export async function loggerParams(config: AppConfig, options: LoggingOptions = {}): Promise<Params> {
  const format = config.env.LOG_FORMAT ?? (config.env.NODE_ENV === 'development' ? 'pretty' : 'json');
  const pinoHttp: Options = {
    level: options.silent ? 'silent' : config.env.LOG_LEVEL,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    genReqId: (req) => requestIdFor(req),
    customAttributeKeys: { reqId: 'request_id', responseTime: 'duration_ms' },
    // Logs written while handling a request carry its id only; the request line says the rest.
    quietReqLogger: true,
    quietResLogger: true,
    customLogLevel: level,
    customSuccessMessage: () => 'request completed',
    customErrorMessage: () => 'request failed',
    customSuccessObject: (req, res, value: { duration_ms: number }) => requestLine(req, res, value.duration_ms),
    customErrorObject: (req, res, _error, value: { duration_ms: number }) => requestLine(req, res, value.duration_ms),
  };
  if (format === 'json') {
    pinoHttp.timestamp = stdTimeFunctions.isoTime;
    pinoHttp.formatters = { level: (label) => ({ level: label }) };
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
        log.method ? `${String(log.method)} ${String(log.path)} ${String(log.status)} ${String(log.duration_ms)}ms` : String(log[messageKey]),
    });
  }
  return {
    pinoHttp: destination ? [pinoHttp, destination] : pinoHttp,
    // nestjs-pino's default route ('{/*splat}', no leading slash) matches nothing once
    // @fastify/middie 9.3.6 prefixes it with '/'; this form matches every path on both.
    forRoutes: [{ path: '/{*splat}', method: RequestMethod.ALL }],
  };
}
