import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { METRICS_CHALLENGE, metricsTokenAccepted } from './metrics-token.js';
import { METRICS_OPTIONS, type MetricsOptions } from './metrics.options.js';
import { MetricsService } from './metrics.service.js';

/**
 * METRICS_PORT: GET /metrics on a port of its own, so it can stay off the public one
 * (publish only the API port; let Prometheus reach this one on the private network).
 */
@Injectable()
export class MetricsServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(MetricsServer.name);
  private server?: Server;

  constructor(
    private readonly metrics: MetricsService,
    @Inject(METRICS_OPTIONS) private readonly options: MetricsOptions,
  ) {}

  /** The bound port (useful with METRICS_PORT=0). */
  get port(): number | undefined {
    return (this.server?.address() as AddressInfo | null)?.port;
  }

  async onApplicationBootstrap(): Promise<void> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      const reply = (status: number, body: string, headers: Record<string, string> = {}) => {
        res.writeHead(status, {
          'Content-Type': 'text/plain; charset=utf-8',
          'Cache-Control': 'no-store',
          'X-Content-Type-Options': 'nosniff',
          ...headers,
        });
        res.end(body);
      };
      if (path !== '/metrics') return reply(404, 'Not Found\n');
      if (req.method !== 'GET' && req.method !== 'HEAD')
        return reply(405, 'Method Not Allowed\n', { Allow: 'GET, HEAD' });
      if (!metricsTokenAccepted(this.options.token, req.headers))
        return reply(401, 'Unauthorized\n', { 'WWW-Authenticate': METRICS_CHALLENGE });
      this.metrics.render().then(
        (text) => reply(200, text, { 'Content-Type': this.metrics.contentType }),
        () => reply(500, 'Internal Server Error\n'),
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port ?? 0, this.options.host, () => resolve());
    });
    this.server = server;
    this.logger.log(`Metrics on port ${this.port} (GET /metrics)`);
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
