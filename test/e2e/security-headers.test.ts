import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOWHERE, TestClock } from '../support/factories.js';
import { rawRequest, type RawResponse } from '../support/raw-http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

function expectBaseHeaders(res: RawResponse, label: string): void {
  expect.soft(res.headers['x-content-type-options'], `${label}: X-Content-Type-Options`).toBe('nosniff');
  expect.soft(res.headers['cache-control'], `${label}: Cache-Control`).toBe('no-store');
  expect.soft(res.headers['x-powered-by'], `${label}: X-Powered-By`).toBeUndefined();
  expect.soft(res.headers['server'], `${label}: Server`).toBeUndefined();
}

describe('response headers', () => {
  let t: TestApp;
  let bare: TestApp;
  let w: { orgId: string; userId: string; session: string };
  let key: string;

  beforeAll(async () => {
    t = await startTestApp();
    // API keys not configured (501) and a failure limit of one (429), on the same database.
    // Failure counts are shared through the database: bare's clock runs a few minutes ahead, in
    // windows of its own, so t's deliberate 401s do not use up its budget of one.
    bare = await startTestApp({
      db: t.db,
      clock: new TestClock(new Date(Date.now() + 5 * 60_000).toISOString()),
      env: { API_KEY_SECRET: undefined, AUTH_FAILURE_LIMIT: '1' },
    });
    w = await t.seed.world('owner');
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId });
    expect(minted.status, minted.text).toBe(201);
    key = minted.body.key;
  });
  afterAll(async () => {
    await bare?.close();
    await t?.close();
  });

  it('are on every answer: success, every error status, unknown routes and requests refused below the framework', async () => {
    const auth = (token: string): [string, string] => ['Authorization', `Bearer ${token}`];
    const json: [string, string] = ['Content-Type', 'application/json'];
    const noWorkspace = await t.seed.world('owner');
    await t.db.pool.query('DELETE FROM workspaces WHERE org_id = $1', [noWorkspace.orgId]);
    const revokeMe = (await t.api.post('/api-keys', w.session, { org_id: w.orgId })).body.id;

    const cases: Array<[string, number, () => Promise<RawResponse>]> = [
      ['GET /me', 200, () => rawRequest(t.url, { method: 'GET', path: '/me', headers: [auth(key)] })],
      ['HEAD /me', 200, () => rawRequest(t.url, { method: 'HEAD', path: '/me', headers: [auth(key)] })],
      ['GET /usage', 200, () => rawRequest(t.url, { method: 'GET', path: '/usage', headers: [auth(key)] })],
      ['GET /api-keys', 200, () => rawRequest(t.url, { method: 'GET', path: '/api-keys', headers: [auth(w.session)] })],
      [
        'POST /api-keys (the key is in this body)',
        201,
        () =>
          rawRequest(t.url, {
            method: 'POST',
            path: '/api-keys',
            headers: [auth(w.session), json],
            body: JSON.stringify({ org_id: w.orgId }),
          }),
      ],
      [
        'DELETE /api-keys/{id}',
        204,
        () => rawRequest(t.url, { method: 'DELETE', path: `/api-keys/${revokeMe}`, headers: [auth(w.session)] }),
      ],
      [
        '400 invalid body',
        400,
        () =>
          rawRequest(t.url, {
            method: 'POST',
            path: '/api-keys',
            headers: [auth(w.session), json],
            body: '{"org_id":1}',
          }),
      ],
      [
        '400 malformed JSON',
        400,
        () => rawRequest(t.url, { method: 'POST', path: '/api-keys', headers: [auth(w.session), json], body: '{' }),
      ],
      [
        '400 malformed URL',
        400,
        () => rawRequest(t.url, { method: 'DELETE', path: '/api-keys/%zz', headers: [auth(w.session)] }),
      ],
      [
        '400 over-long path parameter',
        400,
        () =>
          rawRequest(t.url, { method: 'DELETE', path: `/api-keys/${'a'.repeat(3000)}`, headers: [auth(w.session)] }),
      ],
      ['400 malformed HTTP', 400, () => rawRequest(t.url, { method: 'GET', path: '/me\u0000', headers: [] })],
      ['401 no credential', 401, () => rawRequest(t.url, { method: 'GET', path: '/me' })],
      ['401 bad credential', 401, () => rawRequest(t.url, { method: 'GET', path: '/usage', headers: [auth('nope')] })],
      [
        '403 API key on a lifecycle route',
        403,
        () => rawRequest(t.url, { method: 'GET', path: '/api-keys', headers: [auth(key)] }),
      ],
      ['404 unknown route', 404, () => rawRequest(t.url, { method: 'GET', path: '/nope' })],
      ['404 unknown method', 404, () => rawRequest(t.url, { method: 'PUT', path: '/api-keys' })],
      [
        '404 missing key',
        404,
        () => rawRequest(t.url, { method: 'DELETE', path: `/api-keys/${NOWHERE}`, headers: [auth(w.session)] }),
      ],
      [
        '409 no workspace',
        409,
        () =>
          rawRequest(t.url, {
            method: 'POST',
            path: '/api-keys',
            headers: [auth(noWorkspace.session), json],
            body: JSON.stringify({ org_id: noWorkspace.orgId }),
          }),
      ],
      [
        '413 body too large',
        413,
        () =>
          rawRequest(t.url, {
            method: 'POST',
            path: '/api-keys',
            headers: [auth(w.session), json],
            body: 'x'.repeat(20_000),
          }),
      ],
      [
        '415 not JSON',
        415,
        () =>
          rawRequest(t.url, {
            method: 'POST',
            path: '/api-keys',
            headers: [auth(w.session), ['Content-Type', 'text/plain']],
            body: 'hi',
          }),
      ],
      [
        '417 unsupported Expect',
        417,
        () => rawRequest(t.url, { method: 'GET', path: '/me', headers: [['Expect', 'something']] }),
      ],
      [
        '431 headers too large',
        431,
        () => rawRequest(t.url, { method: 'GET', path: '/me', headers: [['X-Big', 'b'.repeat(20_000)]] }),
      ],
      [
        '501 keys not configured',
        501,
        () => rawRequest(bare.url, { method: 'GET', path: '/api-keys', headers: [auth(w.session)] }),
      ],
      [
        '401 then 429 throttled',
        429,
        async () => {
          await rawRequest(bare.url, { method: 'GET', path: '/me', headers: [auth('nope')] });
          return rawRequest(bare.url, { method: 'GET', path: '/me', headers: [auth('nope')] });
        },
      ],
    ];
    for (const [label, status, call] of cases) {
      const res = await call();
      expect.soft(res.status, label).toBe(status);
      expectBaseHeaders(res, label);
    }
  });
});
