import { ArgumentsHost, Catch, HttpException, HttpStatus, Logger, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { isDatabaseUnavailable, setResponseHeader } from '../auth/http-utils.js';
import { scrubCredentials } from '../common/request-context.js';
import { TooManyRequests } from '../common/too-many-requests.js';
import { reasonPhrase } from './reason-phrase.js';

/** Retry-After of a 503 without one of its own (the database cannot answer): about a Patroni failover's loop_wait. */
const DATABASE_RETRY_AFTER_SECONDS = 2;

/**
 * The standalone app's one filter: every error body is `{ statusCode, error, message }` (a 429
 * adds `budget` and `retry_after`);
 * a database outage is a 503; anything unexpected is a 500 that says nothing of internals.
 * (Registered by the standalone app only: the module never imposes a filter on a host.)
 */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpExceptionFilter');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const { httpAdapter } = this.adapterHost;
    const ctx = host.switchToHttp();
    let status: number;
    let message: string;
    if (exception instanceof HttpException && isFastifyClientError(exception.cause)) {
      // Nest wraps Fastify's own errors (body too large, bad JSON, media type) with the original as cause.
      status = exception.getStatus();
      message = clientErrorMessage(exception.cause);
    } else if (exception instanceof HttpException) {
      status = exception.getStatus();
      const response = exception.getResponse();
      const raw = typeof response === 'string' ? response : (response as { message?: unknown }).message;
      message = Array.isArray(raw) ? raw.join('; ') : typeof raw === 'string' ? raw : exception.message;
    } else if (isFastifyClientError(exception)) {
      status = exception.statusCode;
      message = clientErrorMessage(exception);
    } else if (isDatabaseUnavailable(exception)) {
      status = HttpStatus.SERVICE_UNAVAILABLE;
      message = 'The database is unavailable; retry shortly';
    } else {
      status = HttpStatus.INTERNAL_SERVER_ERROR;
      message = 'Internal server error';
      this.logger.error(
        exception instanceof Error ? `${exception.name}: ${exception.message}` : 'non-error thrown',
        exception instanceof Error ? exception.stack : undefined,
      );
    }
    // A 503 (the database cannot answer, here or as mapped by a guard or interceptor) says when to
    // try again: a failover to a new primary takes seconds. One set by whoever refused is kept.
    if (status === 503 && !hasHeader(ctx.getResponse(), 'retry-after'))
      setResponseHeader(ctx.getResponse(), 'Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
    // Some messages echo the request (Nest's "Cannot GET /path"): a key or token pasted into a URL stays out.
    const body: Record<string, unknown> = {
      statusCode: status,
      error: reasonPhrase(status),
      message: scrubCredentials(message),
    };
    // The one 429 names the budget and the wait (common/too-many-requests.ts).
    if (exception instanceof TooManyRequests) {
      body.budget = exception.budget;
      body.retry_after = exception.retryAfter;
    }
    httpAdapter.reply(ctx.getResponse(), body, status);
  }
}

function hasHeader(response: unknown, name: string): boolean {
  const r = response as { getHeader?: (n: string) => unknown };
  return typeof r.getHeader === 'function' && r.getHeader(name) !== undefined;
}

interface FastifyClientError {
  statusCode: number;
  code?: string;
  message: string;
}

function isFastifyClientError(e: unknown): e is FastifyClientError {
  const s = (e as { statusCode?: unknown } | null)?.statusCode;
  return typeof s === 'number' && s >= 400 && s < 500;
}

function clientErrorMessage(e: FastifyClientError): string {
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return 'The request body is not valid JSON, or it holds a forbidden "__proto__" or "constructor.prototype" key';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'The request body is empty: send a JSON object';
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'The request body is too large (limit 16 KiB)';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'Unsupported Content-Type: send application/json';
    default:
      return e.message.replace(/^FST_\w+:\s*/, '');
  }
}
