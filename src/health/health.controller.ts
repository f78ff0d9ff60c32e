import { Controller, Get, Res, ServiceUnavailableException } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  HealthCheck,
  HealthCheckService,
  TypeOrmHealthIndicator,
  type HealthCheckResult,
  type HealthIndicatorResult,
} from '@nestjs/terminus';
import type { FastifyReply } from 'fastify';

/** How long the readiness probe waits for `SELECT 1` before calling the database down. */
const DB_PING_TIMEOUT_MS = 1500;

/** A terminus result map: each check's result by the check's name (liveness runs none, so its maps are empty). */
const CHECK_RESULTS = {
  type: 'object',
  additionalProperties: {
    type: 'object',
    required: ['status'],
    properties: { status: { type: 'string', enum: ['up', 'degraded', 'down'] } },
  },
};

/**
 * Probes for orchestrators and load balancers. Unauthenticated: they say nothing about the data.
 * Liveness never touches the database, so an outage makes replicas unready, not restarted.
 */
@ApiTags('operations')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
  ) {}

  @Get('live')
  // Terminus would document a 503 here; liveness checks nothing and never gives one.
  @HealthCheck({ swaggerDocumentation: false })
  @ApiOperation({ operationId: 'healthLive', summary: 'Liveness', description: 'Always 200 while the process is up.' })
  @ApiOkResponse({
    description: 'The process is up.',
    schema: {
      type: 'object',
      required: ['status'],
      properties: {
        status: { type: 'string', enum: ['ok'] },
        info: CHECK_RESULTS,
        error: CHECK_RESULTS,
        details: CHECK_RESULTS,
      },
    },
  })
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  @Get('ready')
  @HealthCheck()
  @ApiOperation({
    operationId: 'healthReady',
    summary: 'Readiness',
    description: 'The database answers a ping: 200; otherwise 503.',
  })
  async ready(@Res({ passthrough: true }) reply: FastifyReply): Promise<HealthCheckResult> {
    try {
      return await this.health.check([() => this.db.pingCheck('database', { timeout: DB_PING_TIMEOUT_MS })]);
    } catch (error) {
      if (!(error instanceof ServiceUnavailableException)) throw error;
      // Terminus's own body, minus the driver's message (it can name hosts and ports); the log has it.
      reply.status(503);
      return withoutMessages(error.getResponse() as HealthCheckResult);
    }
  }
}

function withoutMessages(result: HealthCheckResult): HealthCheckResult {
  const strip = (r: Partial<HealthIndicatorResult> | undefined): HealthIndicatorResult | undefined =>
    r && Object.fromEntries(Object.entries(r).map(([k, v]) => [k, { status: v?.status ?? 'down' }]));
  return {
    status: result.status,
    info: strip(result.info),
    error: strip(result.error),
    details: strip(result.details) ?? {},
  };
}
