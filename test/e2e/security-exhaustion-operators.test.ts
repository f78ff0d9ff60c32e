import { ForbiddenException } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { describe, expect, it } from 'vitest';
import { MetricsServer } from '../../src/metrics/metrics-server.js';
import { MetricsTokenGuard } from '../../src/metrics/metrics-token.guard.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { startLoggedApp } from '../support/log-capture.js';
import { startTestApp } from '../support/test-app.js';

/*
 * A hostile tenant with the lowest role tries to exhaust the service; this file: what operators watch: /metrics on its own listener, guarded, and client addresses in the logs.
 */

describe('metrics and logs for operators', () => {
  it('serves /metrics on its own listener bound to loopback by default, rendered at most once a second', async () => {
    const t = await startTestApp({ env: { METRICS_PORT: '0', METRICS_CACHE_MS: '1000' } });
    try {
      const server = t.app.get(MetricsServer) as unknown as { server: import('node:http').Server };
      expect((server.server.address() as { address: string }).address).toBe('127.0.0.1');
      expect((await t.api.get('/metrics')).status, 'not on the API port').toBe(404);
      const metrics = t.app.get(MetricsService);
      expect(metrics.render(), 'a second scrape within the second reuses the render').toBe(metrics.render());
    } finally {
      await t.close();
    }
  });

  it('refuses /metrics on the API port to a client that is not loopback when no METRICS_TOKEN is set', () => {
    const guard = new MetricsTokenGuard({ allowLoopback: true });
    // `ip` is the client after the TRUST_PROXY rules (Fastify's request.ip).
    const ctx = (ip: string) =>
      new ExecutionContextHost([{ headers: { 'x-forwarded-for': '127.0.0.1' }, ip }, { header() {} }]);
    expect(() => guard.canActivate(ctx('203.0.113.9'))).toThrow(ForbiddenException);
    expect(() => guard.canActivate(ctx('10.0.0.4'))).toThrow(/METRICS_TOKEN/);
    expect(guard.canActivate(ctx('127.0.0.1'))).toBe(true);
    expect(guard.canActivate(ctx('::1'))).toBe(true);
    expect(guard.canActivate(ctx('::ffff:127.0.0.1'))).toBe(true);
  });

  it('writes the client address, after the trust-proxy rules, on every request line', async () => {
    const t = await startLoggedApp({ LOG_FORMAT: 'json', LOG_LEVEL: 'info', TRUST_PROXY: '1' });
    try {
      const res = await t.api.get('/me', 'nope', { 'x-forwarded-for': '192.0.2.1, 198.51.100.23' });
      expect(res.status).toBe(401);
      const id = res.headers.get('x-request-id');
      await expect
        .poll(() => t.logs.records().some((r) => r.request_id === id), { timeout: 15_000, interval: 50 })
        .toBe(true);
      expect(t.logs.records().find((r) => r.request_id === id)).toMatchObject({ client: '198.51.100.23', status: 401 });
    } finally {
      await t.close();
    }
  });
});
