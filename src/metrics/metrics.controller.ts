import { Controller, Get, Header, UseGuards } from '@nestjs/common';
import { ApiForbiddenResponse, ApiOkResponse, ApiOperation, ApiProduces, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { ErrorBody } from '../common/openapi.js';
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
    description: 'Prometheus text format. Loopback peers only unless METRICS_TOKEN is set (then the bearer token is required); absent from this port when METRICS_PORT is set. Rendered at most once a second.',
  })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Prometheus exposition text', schema: { type: 'string' } })
  @ApiUnauthorizedResponse({ description: 'METRICS_TOKEN is set and the request did not carry it', type: ErrorBody })
  @ApiForbiddenResponse({ description: 'METRICS_TOKEN is not set and the request does not come from loopback', type: ErrorBody })
  render(): Promise<string> {
    return this.metrics.render();
  }
}
