import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { HttpDurationMetric } from './http-duration.js';
import { HTTP_BUCKETS } from './metrics.service.js';

async function rendering(observations: Array<[string, string, number, number]>, maxSeries?: number): Promise<string> {
  const registry = new Registry();
  const h = new HttpDurationMetric(registry, HTTP_BUCKETS, maxSeries);
  for (const [method, route, status, seconds] of observations) h.observe(method, route, status, seconds);
  return registry.metrics();
}

describe('HttpDurationMetric', () => {
  it('renders http_request_duration_seconds per method, route template and status code, in the configured buckets', async () => {
    const text = await rendering([
      ['GET', '/me', 200, 0.0004],
      ['GET', '/me', 200, 0.03],
      ['DELETE', '/api-keys/:keyID', 404, 7.5],
    ]);
    expect(text).toContain('# TYPE http_request_duration_seconds histogram');
    expect(text).toContain('http_request_duration_seconds_count{method="GET",route="/me",status_code="200"} 2');
    expect(text).toContain(
      'http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/me",status_code="200"} 2',
    );
    expect(text).toContain(
      `http_request_duration_seconds_bucket{le="${HTTP_BUCKETS[0]}",method="GET",route="/me",status_code="200"} 1`,
    );
    expect(text).toContain(
      'http_request_duration_seconds_count{method="DELETE",route="/api-keys/:keyID",status_code="404"} 1',
    );
    const bounds = [...text.matchAll(/_bucket\{le="([^"]+)",method="GET"/g)].map((m) => m[1]);
    expect(bounds).toEqual([...HTTP_BUCKETS.map(String), '+Inf']);
  });

  it('stops adding series at its cap and keeps counting the ones it has', async () => {
    const text = await rendering(
      [
        ['GET', '/a', 200, 0.002],
        ['GET', '/b', 200, 0.002],
        ['GET', '/a', 200, 0.003],
      ],
      1,
    );
    expect(text).toContain('http_request_duration_seconds_count{method="GET",route="/a",status_code="200"} 2');
    expect(text).not.toContain('route="/b"');
  });

  it('ignores a duration that is not a finite number instead of throwing into the request', async () => {
    const text = await rendering([
      ['GET', '/a', 200, Number.NaN],
      ['GET', '/a', 200, 0.001],
    ]);
    expect(text).toContain('http_request_duration_seconds_count{method="GET",route="/a",status_code="200"} 1');
  });
});
