import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TEST_API_KEY_SECRET, TEST_SESSION_SECRET } from '../support/seed.js';
import { startLoggedApp, type LogCapture } from '../support/log-capture.js';
import type { TestApp } from '../support/test-app.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('request logs (JSON, LOG_LEVEL=info)', () => {
  let t: TestApp & { logs: LogCapture };
  beforeAll(async () => {
    t = await startLoggedApp({ LOG_FORMAT: 'json', LOG_LEVEL: 'info' });
  });
  afterAll(async () => t?.close());

  /** The request line of one request id; request lines are written once the response is finished. */
  const lineOf = (requestId: string) =>
    vi.waitFor(() => {
      const found = t.logs.records().filter((r) => r.request_id === requestId && r.msg === 'request completed');
      expect(found).toHaveLength(1);
      return found[0];
    });

  it('writes every line as JSON with a level name and an ISO time', async () => {
    // The start-up lines and at least one request's line (a worker may have logged its one-time
    // notices for an earlier file already).
    await lineOf((await t.api.get('/me')).headers.get('x-request-id')!);
    for (const record of t.logs.records()) {
      expect(record.level).toMatch(/^(trace|debug|info|warn|error|fatal)$/);
      expect(String(record.time)).toMatch(/^\d{4}-\d\d-\d\dT/);
    }
  });

  it("logs the request once under the service's own id, with the caller's X-Request-Id beside it, never in its place", async () => {
    const res = await t.api.get('/me', undefined, { 'x-request-id': 'trace-abc.123' });
    const ours = res.headers.get('x-request-id')!;
    expect(ours).toMatch(UUID);
    const line = await lineOf(ours);
    expect(line).toMatchObject({
      level: 'info',
      method: 'GET',
      route: '/me',
      path: '/me',
      status: 401,
      client_request_id: 'trace-abc.123',
    });
    expect(typeof line.duration_ms).toBe('number');
    expect(t.logs.records().filter((r) => r.request_id === 'trace-abc.123')).toEqual([]);
  });

  it('generates a fresh request id for every request, and keeps no unsafe caller id', async () => {
    const cases: Record<string, string>[] = [
      {},
      { 'x-request-id': 'has spaces "and quotes"' },
      { 'x-request-id': 'x'.repeat(129) },
      { 'x-request-id': 'same' },
      { 'x-request-id': 'same' },
    ];
    const seen = new Set<string>();
    for (const headers of cases) {
      const res = await t.api.get('/me', undefined, headers);
      const id = res.headers.get('x-request-id')!;
      expect(id).toMatch(UUID);
      seen.add(id);
      const line = await lineOf(id);
      if (headers['x-request-id'] === 'same') expect(line.client_request_id).toBe('same');
      else expect(line).not.toHaveProperty('client_request_id');
    }
    expect(seen.size).toBe(cases.length);
  });

  it('names the principal by ids: the user for a session, user, org and key for an API key', async () => {
    const w = await t.seed.world('owner');
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId });
    expect(await lineOf(minted.headers.get('x-request-id')!)).toMatchObject({
      route: '/api-keys',
      status: 201,
      auth: 'session',
      user_id: w.userId,
    });
    const me = await t.api.get('/me', minted.body.key);
    expect(await lineOf(me.headers.get('x-request-id')!)).toMatchObject({
      route: '/me',
      status: 200,
      auth: 'api_key',
      user_id: w.userId,
      org_id: w.orgId,
      key_id: minted.body.id,
    });
  });

  it('logs the route template for parameterised and unknown routes', async () => {
    const w = await t.seed.world('owner');
    const res = await t.api.delete('/api-keys/0b7f9f7e-35a5-4a63-9d5f-3a9b1e7c2d10', w.session);
    expect(await lineOf(res.headers.get('x-request-id')!)).toMatchObject({ route: '/api-keys/:keyID', status: 404 });
    const unknown = await t.api.get('/nowhere');
    expect(await lineOf(unknown.headers.get('x-request-id')!)).toMatchObject({ route: '(unmatched)', status: 404 });
  });

  it('keeps probe lines below info, so LOG_LEVEL=info leaves them out', async () => {
    const res = await t.api.get('/health/live', undefined, { 'x-request-id': 'probe-1' });
    expect(res.status).toBe(200);
    const after = await t.api.get('/me', undefined, { 'x-request-id': 'after-probe-1' });
    await lineOf(after.headers.get('x-request-id')!);
    const probeId = res.headers.get('x-request-id');
    expect(t.logs.records().filter((r) => r.request_id === probeId)).toEqual([]);
  });

  it('never writes a bearer token, an API key or a secret, wherever the caller puts them', async () => {
    const w = await t.seed.world('owner');
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'logged?' });
    const key = minted.body.key as string;
    const ids = [
      await t.api.get('/me', key),
      await t.api.get('/me', w.session),
      await t.api.get('/me', `${key}x`),
      await t.api.get('/me', 'not-a-jwt-but-a-secret-looking-token'),
      await t.api.get(`/me?api_key=${key}&token=${w.session}`),
      await t.api.delete(`/api-keys/${key}`, w.session),
      await t.api.get('/me', undefined, { 'x-request-id': key }),
      await t.api.get('/me', undefined, { 'x-request-id': w.session }),
      await t.api.get('/api-keys', key),
    ].map((r) => r.headers.get('x-request-id')!);
    for (const id of ids) await lineOf(id);
    expect(ids).not.toContain(key);
    const text = t.logs.text;
    for (const secret of [
      key,
      key.slice(9),
      w.session,
      'not-a-jwt-but-a-secret-looking-token',
      TEST_API_KEY_SECRET,
      TEST_SESSION_SECRET,
    ]) {
      expect(text).not.toContain(secret);
    }
    expect(text).not.toMatch(/svc_live_[A-Za-z0-9]/);
    expect(text).not.toMatch(/bearer /i);
    expect(text).not.toMatch(/authorization/i);
  });
});
