import { Inject, Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { setResponseHeader } from '../auth/http-utils.js';
import { METRICS_CHALLENGE, metricsTokenAccepted } from './metrics-token.js';
import { METRICS_OPTIONS, type MetricsOptions } from './metrics.options.js';

/** METRICS_TOKEN set: /metrics answers 401 without `Authorization: Bearer <METRICS_TOKEN>`. */
@Injectable()
export class MetricsTokenGuard implements CanActivate {
  constructor(@Inject(METRICS_OPTIONS) private readonly options: MetricsOptions) {}

  canActivate(ctx: ExecutionContext): boolean {
    const http = ctx.switchToHttp();
    const request = http.getRequest<{ headers: Record<string, unknown> }>();
    if (metricsTokenAccepted(this.options.token, request.headers)) return true;
    setResponseHeader(http.getResponse(), 'WWW-Authenticate', METRICS_CHALLENGE);
    throw new UnauthorizedException('Metrics require Authorization: Bearer <METRICS_TOKEN>');
  }
}
