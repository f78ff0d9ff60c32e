import { describe, expect, it } from 'vitest';
import { Histogram, Registry, type Metric } from 'prom-client';
import { HttpDurationHistogram } from './http-duration.js';
import { HTTP_BUCKETS } from './metrics.service.js';

/** The same observations through prom-client's own labelled Histogram, rendered by a Registry. */
async function promClientRendering(observations: Array<[string, string, number, number]>): Promise<string> {
  const registry = new Registry();
  const h = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP requests by method, route template and status code',
    labelNames: ['method', 'route', 'status_code'],
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });
  for (const [method, route, status, seconds] of observations) h.observe({ method, route, status_code: String(status) }, seconds);
  return registry.metrics();
}

async function ourRendering(observations: Array<[string, string, number, number]>, maxSeries?: number): Promise<string> {
  const registry = new Registry();
  const h = new HttpDurationHistogram(HTTP_BUCKETS, maxSeries);
  registry.registerMetric(h as unknown as Metric);
  for (const [method, route, status, seconds] of observations) h.observe(method, route, status, seconds);
  return registry.metrics();
}

const lines = (text: string) => text.split('\n').filter(Boolean).sort();

describe('HttpDurationHistogram', () => {
  it("renders exactly what prom-client's Histogram renders for the same observations", async () => {
    const observations: Array<[string, string, number, number]> = [];
    const routes = ['/me', '/usage', '/api-keys/:keyID'];
    // Values on, between, below and above the bounds, 0 included.
    const values = [0, 0.0004, 0.001, 0.0011, 0.0025, 0.03, 0.5, 0.75, 5, 7.5, 120];
    let i = 0;
    for (const route of routes) for (const status of [200, 401, 404]) for (const method of ['GET', 'DELETE']) {
      for (let n = 0; n <= i % 4; n++) observations.push([method, route, status, values[(i + n) % values.length]]);
      i++;
    }
    const ours = await ourRendering(observations);
    expect(lines(ours)).toEqual(lines(await promClientRendering(observations)));
    expect(ours).toContain('http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/me",status_code="200"} 1');
  });

  it('stops adding series at its cap and keeps counting the ones it has', async () => {
    const text = await ourRendering([
      ['GET', '/a', 200, 0.002],
      ['GET', '/b', 200, 0.002],
      ['GET', '/a', 200, 0.003],
    ], 1);
    expect(text).toContain('http_request_duration_seconds_count{method="GET",route="/a",status_code="200"} 2');
    expect(text).not.toContain('route="/b"');
  });
});
