import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/auth/api-key-format.js';
import { loadEnvironment } from '../../src/config/app-config.js';
import { MetricsServer } from '../../src/metrics/metrics-server.js';
import { UsageService } from '../../src/usage/usage.service.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** The value of one sample line, e.g. `api_keys_minted_total` or `usage_charged_units_total{meter="imports"}`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('GET /metrics', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  const scrape = async () => {
    const res = await t.api.get('/metrics');
    expect(res.status).toBe(200);
    return res.text;
  };

  it('serves Prometheus text without a credential by default', async () => {
    const res = await t.api.get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.text).toContain('# TYPE http_request_duration_seconds histogram');
    expect(res.text).toContain('# TYPE process_cpu_user_seconds_total counter');
  });

  it('times requests by method, route template and status, never by raw URL', async () => {
    const count = (text: string, labels: string) => sample(text, `http_request_duration_seconds_count{${labels}}`) ?? 0;
    const before = await scrape();
    const w = await t.seed.world('owner');
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId });
    expect((await t.api.delete(`/api-keys/${minted.body.id}`, w.session)).status).toBe(204);
    await t.api.get('/no/such/route/unmatched-probe');
    const after = await scrape();
    for (const labels of [
      'method="POST",route="/api-keys",status_code="201"',
      'method="DELETE",route="/api-keys/:keyID",status_code="204"',
      'method="GET",route="(unmatched)",status_code="404"',
    ]) {
      expect(count(after, labels) - count(before, labels), labels).toBe(1);
    }
    expect(after).not.toContain(minted.body.id);
    expect(after).not.toContain('unmatched-probe'); // a metric value may contain any digits, so a word
  });

  it('counts key verifications by outcome', async () => {
    const w = await t.seed.world('owner');
    const key = (await t.api.post('/api-keys', w.session, { org_id: w.orgId })).body.key as string;
    const revoked = (await t.api.post('/api-keys', w.session, { org_id: w.orgId })).body;
    await t.api.delete(`/api-keys/${revoked.id}`, w.session);
    const before = await scrape();
    const outcome = (text: string, o: string) => sample(text, `api_key_verifications_total{outcome="${o}"}`) ?? NaN;

    expect((await t.api.get('/me', key)).status).toBe(200);
    expect((await t.api.get('/me', key)).status).toBe(200);
    expect((await t.api.get('/me', revoked.key)).status).toBe(401);
    expect((await t.api.get('/me', generateApiKey().key)).status).toBe(401);
    expect((await t.api.get('/me', `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`)).status).toBe(401);

    const after = await scrape();
    expect(outcome(after, 'ok') - outcome(before, 'ok')).toBe(2);
    expect(outcome(after, 'revoked') - outcome(before, 'revoked')).toBe(1);
    expect(outcome(after, 'unknown') - outcome(before, 'unknown')).toBe(1);
    expect(outcome(after, 'malformed') - outcome(before, 'malformed')).toBe(1);
    expect(outcome(after, 'expired')).toBe(0);
  });

  it('counts mints, revokes, charged units and refused charges', async () => {
    const before = await scrape();
    const w = await t.seed.world('owner');
    const a = await t.api.post('/api-keys', w.session, { org_id: w.orgId });
    await t.api.post('/api-keys', w.session, { org_id: w.orgId });
    await t.api.delete(`/api-keys/${a.body.id}`, w.session);
    const usage = t.app.get(UsageService);
    await usage.charge(w.orgId, 'imports', 7);
    await usage.charge(w.orgId, 'imports', 3);
    await expect(usage.charge(w.orgId, 'imports', 1)).rejects.toThrow(/limit/); // free plan: 10 imports a day
    const after = await scrape();
    const delta = (series: string) => (sample(after, series) ?? NaN) - (sample(before, series) ?? NaN);
    expect(delta('api_keys_minted_total')).toBe(2);
    expect(delta('api_keys_revoked_total')).toBe(1);
    expect(delta('usage_charged_units_total{meter="imports"}')).toBe(10);
    expect(delta('usage_charge_refusals_total{meter="imports"}')).toBe(1);
    expect(sample(after, 'usage_charged_units_total{meter="captures"}')).toBe(0);
  });

  it("exports the database pool's connection counts", async () => {
    const text = await scrape();
    expect(sample(text, 'db_pool_connections')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'db_pool_idle_connections')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'db_pool_waiting_requests')).toBe(0);
  });
});

describe('GET /metrics with METRICS_TOKEN', () => {
  const token = 'metrics-token-0123456789abcdef';
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { METRICS_TOKEN: token } });
  });
  afterAll(async () => t?.close());

  it('refuses a scrape without the token, or with another credential, with 401 and a challenge', async () => {
    for (const given of [undefined, 'wrong-token-0123456789abcdef', `${token}x`]) {
      const res = await t.api.get('/metrics', given);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(res.body).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
    }
  });

  it('serves the metrics to a scrape that carries the token', async () => {
    const res = await t.api.get('/metrics', token);
    expect(res.status).toBe(200);
    expect(res.text).toContain('api_key_verifications_total');
  });

  it('says so in the OpenAPI document', async () => {
    const doc = (await t.api.get('/openapi.json')).body;
    expect(doc.paths['/metrics'].get.security).toEqual([{ metricsToken: [] }]);
    expect(doc.components.securitySchemes.metricsToken).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('leaves the health probes open', async () => {
    expect((await t.api.get('/health/live')).status).toBe(200);
  });
});

describe('GET /metrics with METRICS_PORT', () => {
  let t: TestApp;
  let metricsUrl: string;
  beforeAll(async () => {
    t = await startTestApp({ env: { METRICS_PORT: '0' } });
    metricsUrl = `http://127.0.0.1:${t.app.get(MetricsServer).port}`;
  });
  afterAll(async () => t?.close());

  it('serves metrics on their own port and not on the API port', async () => {
    await t.api.get('/me');
    const res = await fetch(`${metricsUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await res.text()).toContain(
      'http_request_duration_seconds_count{method="GET",route="/me",status_code="401"} 1',
    );
    expect((await t.api.get('/metrics')).status).toBe(404);
    expect((await fetch(`${metricsUrl}/other`)).status).toBe(404);
  });
});

describe('GET /metrics on the API port without METRICS_TOKEN', () => {
  it('judges the client after the TRUST_PROXY rules: a proxy on the same host forwarding a public client is refused', async () => {
    const t = await startTestApp({ env: { TRUST_PROXY: '127.0.0.1' } });
    try {
      // 203.0.113.9 is only a header value here: every request goes to 127.0.0.1.
      const forwarded = await t.api.get('/metrics', undefined, { 'x-forwarded-for': '203.0.113.9' });
      expect(forwarded.status).toBe(403);
      expect(forwarded.body.message).toMatch(/METRICS_TOKEN/);
      expect(
        (await t.api.get('/metrics', undefined, { 'x-forwarded-for': '127.0.0.1' })).status,
        'a loopback client behind the proxy',
      ).toBe(200);
      expect((await t.api.get('/metrics')).status, 'the proxy itself').toBe(200);
    } finally {
      await t.close();
    }
  });

  it('is not served in production unless METRICS_ALLOW_LOOPBACK=true, even to loopback', async () => {
    const closed = await startTestApp({ env: { NODE_ENV: 'production' } });
    try {
      const res = await closed.api.get('/metrics');
      expect(res.status).toBe(403);
      expect(res.body.message).toMatch(/METRICS_PORT/);
    } finally {
      await closed.close();
    }
    const open = await startTestApp({ env: { NODE_ENV: 'production', METRICS_ALLOW_LOOPBACK: 'true' } });
    try {
      expect((await open.api.get('/metrics')).status).toBe(200);
    } finally {
      await open.close();
    }
  });

  it('refuses a METRICS_ALLOW_LOOPBACK that is not a boolean, naming it', () => {
    expect(loadEnvironment({ METRICS_ALLOW_LOOPBACK: 'true' }).METRICS_ALLOW_LOOPBACK).toBe(true);
    expect(loadEnvironment({}).METRICS_ALLOW_LOOPBACK).toBeUndefined();
    expect(() => loadEnvironment({ METRICS_ALLOW_LOOPBACK: 'sometimes' })).toThrow(
      /METRICS_ALLOW_LOOPBACK must be true or false/,
    );
  });
});
