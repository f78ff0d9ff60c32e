import {
  ForbiddenException,
  Inject,
  Injectable,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { setResponseHeader } from '../auth/http-utils.js';
import { METRICS_CHALLENGE, metricsTokenAccepted } from './metrics-token.js';
import { METRICS_OPTIONS, type MetricsOptions } from './metrics.options.js';
import { ERRORS } from '../common/error-messages.js';

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3})$/;

/**
 * /metrics on the API port is for operators, not for everyone who reaches the port:
 * - METRICS_TOKEN set: 401 without `Authorization: Bearer <METRICS_TOKEN>`;
 * - unset: only a loopback client may scrape, and only where allowed (METRICS_ALLOW_LOOPBACK;
 *   by default outside production). The client is judged as the throttle judges it, after the
 *   TRUST_PROXY rules (Fastify's request.ip): behind a proxy or sidecar on the same host every
 *   request comes from a loopback peer, and the client is the address the proxy forwarded.
 */
@Injectable()
export class MetricsTokenGuard implements CanActivate {
  constructor(@Inject(METRICS_OPTIONS) private readonly options: MetricsOptions) {}

  canActivate(ctx: ExecutionContext): boolean {
    const http = ctx.switchToHttp();
    const request = http.getRequest<{ ip?: string; headers: Record<string, unknown> }>();
    if (!this.options.token) {
      if (!this.options.allowLoopback) throw new ForbiddenException(ERRORS.metricsNotOnApiPort);
      if (LOOPBACK.test(request.ip ?? '')) return true;
      throw new ForbiddenException(ERRORS.metricsLoopbackOnly);
    }
    if (metricsTokenAccepted(this.options.token, request.headers)) return true;
    setResponseHeader(http.getResponse(), 'WWW-Authenticate', METRICS_CHALLENGE);
    throw new UnauthorizedException(ERRORS.metricsToken);
  }
}
