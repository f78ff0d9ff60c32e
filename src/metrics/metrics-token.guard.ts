import { ForbiddenException, Inject, Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { setResponseHeader } from '../auth/http-utils.js';
import { METRICS_CHALLENGE, metricsTokenAccepted } from './metrics-token.js';
import { METRICS_OPTIONS, type MetricsOptions } from './metrics.options.js';
import { ERRORS } from '../common/error-messages.js';

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3})$/;

/**
 * /metrics on the API port is for operators, not for everyone who reaches the port:
 * - METRICS_TOKEN set: 401 without `Authorization: Bearer <METRICS_TOKEN>`;
 * - unset: only a loopback TCP peer (the socket's own address; X-Forwarded-For is never
 *   consulted) may scrape; anyone else gets 403 saying what to configure.
 */
@Injectable()
export class MetricsTokenGuard implements CanActivate {
  constructor(@Inject(METRICS_OPTIONS) private readonly options: MetricsOptions) {}

  canActivate(ctx: ExecutionContext): boolean {
    const http = ctx.switchToHttp();
    const request = http.getRequest<{ headers: Record<string, unknown>; raw?: { socket?: { remoteAddress?: string } }; socket?: { remoteAddress?: string } }>();
    if (!this.options.token) {
      const peer = (request.raw ?? request).socket?.remoteAddress ?? '';
      if (LOOPBACK.test(peer)) return true;
      throw new ForbiddenException(ERRORS.metricsLoopbackOnly);
    }
    if (metricsTokenAccepted(this.options.token, request.headers)) return true;
    setResponseHeader(http.getResponse(), 'WWW-Authenticate', METRICS_CHALLENGE);
    throw new UnauthorizedException(ERRORS.metricsToken);
  }
}
