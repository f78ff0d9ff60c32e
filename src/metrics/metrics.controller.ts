import { Controller, Get, Header, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/openapi.js';
import { MetricsTokenGuard } from './metrics-token.guard.js';
import { MetricsService } from './metrics.service.js';

/** Mounted on the API port only when METRICS_PORT is unset. */
@ApiTags('operations')
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get()
  @UseGuards(MetricsTokenGuard)
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  @ApiOperation({
    operationId: 'metrics',
    summary: 'Prometheus metrics',
    description:
      'Prometheus text format. With METRICS_TOKEN set, the bearer token is required; without it, loopback clients only (after the TRUST_PROXY rules), and in production nobody unless METRICS_ALLOW_LOOPBACK=true. Absent from this port when METRICS_PORT is set. Rendered at most once a second.',
  })
  @ApiOkResponse({
    description: 'Prometheus exposition text',
    content: { 'text/plain': { schema: { type: 'string' } } },
  })
  // 401 is documented only when METRICS_TOKEN is set (http/openapi.ts removes it otherwise): without one it never answers 401.
  @ApiErrors({
    401: 'METRICS_TOKEN is set and the request did not carry it.',
    403: 'METRICS_TOKEN is not set and the client (after the TRUST_PROXY rules) is not loopback, or loopback scrapes are not allowed (production without METRICS_ALLOW_LOOPBACK).',
  })
  render(): Promise<string> {
    return this.metrics.render();
  }
}
