import { createHmac } from 'node:crypto';
import type { LoggerService } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { rawRequest, type RawResponse } from '../support/raw-http.js';
import { TEST_API_KEY_SECRET, TEST_SESSION_SECRET } from '../support/seed.js';
import { TcpProxy } from '../support/tcp-proxy.js';
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
    bare = await startTestApp({ db: t.db, env: { API_KEY_SECRET: undefined, AUTH_FAILURE_LIMIT: '1' } });
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
      ['POST /api-keys (the key is in this body)', 201, () => rawRequest(t.url, { method: 'POST', path: '/api-keys', headers: [auth(w.session), json], body: JSON.stringify({ org_id: w.orgId }) })],
      ['DELETE /api-keys/{id}', 204, () => rawRequest(t.url, { method: 'DELETE', path: `/api-keys/${revokeMe}`, headers: [auth(w.session)] })],
      ['400 invalid body', 400, () => rawRequest(t.url, { method: 'POST', path: '/api-keys', headers: [auth(w.session), json], body: '{"org_id":1}' })],
      ['400 malformed JSON', 400, () => rawRequest(t.url, { method: 'POST', path: '/api-keys', headers: [auth(w.session), json], body: '{' })],
      ['400 malformed URL', 400, () => rawRequest(t.url, { method: 'DELETE', path: '/api-keys/%zz', headers: [auth(w.session)] })],
      ['400 over-long path parameter', 400, () => rawRequest(t.url, { method: 'DELETE', path: `/api-keys/${'a'.repeat(3000)}`, headers: [auth(w.session)] })],
      ['400 malformed HTTP', 400, () => rawRequest(t.url, { method: 'GET', path: '/me\u0000', headers: [] })],
      ['401 no credential', 401, () => rawRequest(t.url, { method: 'GET', path: '/me' })],
      ['401 bad credential', 401, () => rawRequest(t.url, { method: 'GET', path: '/usage', headers: [auth('nope')] })],
      ['403 API key on a lifecycle route', 403, () => rawRequest(t.url, { method: 'GET', path: '/api-keys', headers: [auth(key)] })],
      ['404 unknown route', 404, () => rawRequest(t.url, { method: 'GET', path: '/nope' })],
      ['404 unknown method', 404, () => rawRequest(t.url, { method: 'PUT', path: '/api-keys' })],
      ['404 missing key', 404, () => rawRequest(t.url, { method: 'DELETE', path: '/api-keys/00000000-0000-4000-8000-000000000000', headers: [auth(w.session)] })],
      ['409 no workspace', 409, () => rawRequest(t.url, { method: 'POST', path: '/api-keys', headers: [auth(noWorkspace.session), json], body: JSON.stringify({ org_id: noWorkspace.orgId }) })],
      ['413 body too large', 413, () => rawRequest(t.url, { method: 'POST', path: '/api-keys', headers: [auth(w.session), json], body: 'x'.repeat(20_000) })],
      ['415 not JSON', 415, () => rawRequest(t.url, { method: 'POST', path: '/api-keys', headers: [auth(w.session), ['Content-Type', 'text/plain']], body: 'hi' })],
      ['417 unsupported Expect', 417, () => rawRequest(t.url, { method: 'GET', path: '/me', headers: [['Expect', 'something']] })],
      ['431 headers too large', 431, () => rawRequest(t.url, { method: 'GET', path: '/me', headers: [['X-Big', 'b'.repeat(20_000)]] })],
      ['501 keys not configured', 501, () => rawRequest(bare.url, { method: 'GET', path: '/api-keys', headers: [auth(w.session)] })],
      ['401 then 429 throttled', 429, async () => {
        await rawRequest(bare.url, { method: 'GET', path: '/me', headers: [auth('nope')] });
        return rawRequest(bare.url, { method: 'GET', path: '/me', headers: [auth('nope')] });
      }],
    ];
    for (const [label, status, call] of cases) {
      const res = await call();
      expect.soft(res.status, label).toBe(status);
      expectBaseHeaders(res, label);
    }
  });
});

describe('secrets', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let t: TestApp;
  const logged: string[] = [];
  const capture = (level: string) => (...parts: unknown[]) => {
    logged.push(`${level} ${parts.map((p) => (p instanceof Error ? `${p.message} ${p.stack}` : typeof p === 'string' ? p : JSON.stringify(p))).join(' ')}`);
  };
  const logger: LoggerService = {
    log: capture('log'), error: capture('error'), warn: capture('warn'), debug: capture('debug'), verbose: capture('verbose'), fatal: capture('fatal'),
  };
  const spies: Array<{ mockRestore(): void }> = [];

  beforeAll(async () => {
    // Everything written to the console or the process's streams is captured as well (TypeORM logs there).
    for (const stream of [process.stdout, process.stderr]) {
      const write = stream.write.bind(stream);
      spies.push(vi.spyOn(stream, 'write').mockImplementation(((chunk: unknown, ...rest: unknown[]) => {
        logged.push(`stream ${String(chunk)}`);
        return write(chunk as string, ...(rest as []));
      }) as typeof stream.write));
    }
    for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
      spies.push(vi.spyOn(console, method).mockImplementation(capture(`console.${method}`)));
    }
    db = await createTestDatabase();
    proxy = await TcpProxy.start(db.url);
    t = await startTestApp({
      db: { ...db, url: proxy.urlFor(db.url) },
      logger,
      env: { LOG_LEVEL: 'trace', DB_CONNECT_TIMEOUT_MS: '500', DB_STATEMENT_TIMEOUT_MS: '1000' },
    });
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
    await db?.drop();
    for (const spy of spies) spy.mockRestore();
  });

  it('never reach logs, error bodies or the database in clear, through a day of normal use, abuse and an outage', async () => {
    const w = await t.seed.world('owner');
    const bodies: string[] = [];
    const keep = async <T extends { text: string; headers: Headers }>(p: Promise<T>): Promise<T> => {
      const r = await p;
      bodies.push(r.text, JSON.stringify([...r.headers.entries()]));
      return r;
    };

    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'ci', scopes: ['decisions:read', 'decisions:write'] });
    expect(minted.status).toBe(201);
    const key: string = minted.body.key;
    const secretPart = key.slice('svc_live_'.length + 13, -6);
    expect(secretPart).toHaveLength(32);

    // Use, misuse and mistakes; every answer but the mint's is kept to be searched.
    await keep(t.api.get('/me', key));
    await keep(t.api.get('/usage', key));
    await keep(t.api.get('/api-keys', w.session));
    await keep(t.api.get('/api-keys', key));
    await keep(t.api.post('/api-keys', key, { org_id: w.orgId }));
    await keep(t.api.get('/me', key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a')));
    await keep(t.api.get('/me', `${key}x`));
    await keep(t.api.get('/me', `${w.session}x`));
    await keep(t.api.get('/me', w.session, { 'x-org-id': key }));
    await keep(t.api.get(`/${key}`, w.session));
    await keep(t.api.get(`/api-keys/${w.session}`, w.session));
    await keep(t.api.delete(`/api-keys/${key}`, w.session));
    await keep(t.api.get(`/api-keys?org_id=${key}`, w.session));
    await keep(t.api.post('/api-keys', w.session, { org_id: w.orgId, key, token: w.session }));
    await keep(t.api.request('POST', '/api-keys', { token: w.session, rawBody: `{"org_id":"${key}"` }));

    // An outage makes the database layer log its failures.
    await proxy.refuse();
    await keep(t.api.get('/me', key));
    await keep(t.api.get('/me', w.session));
    await keep(t.api.post('/api-keys', w.session, { org_id: w.orgId }));
    await proxy.restore();
    for (let i = 0; i < 50 && (await t.api.get('/me', key)).status !== 200; i++) await new Promise((r) => setTimeout(r, 100));

    await keep(t.api.delete(`/api-keys/${minted.body.id}`, w.session));
    await keep(t.api.get('/me', key));
    await keep(t.api.get('/api-keys', w.session));

    const secrets: Record<string, string> = {
      'the API key': key,
      "the key's secret part": secretPart,
      'the session JWT': w.session,
      "the session JWT's signature": w.session.split('.')[2],
      API_KEY_SECRET: TEST_API_KEY_SECRET,
      SESSION_JWT_SECRET: TEST_SESSION_SECRET,
    };

    const { rows: tables } = await db.pool.query<{ name: string }>(
      `SELECT quote_ident(table_name) AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
    );
    expect(tables.map((r) => r.name)).toContain('api_keys');
    const dump: string[] = [];
    for (const { name } of tables) {
      const { rows } = await db.pool.query<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM ${name} t`);
      dump.push(...rows.map((r) => `${name} ${r.row}`));
    }

    const haystacks = { logs: logged.join('\n'), 'response bodies and headers': bodies.join('\n'), 'database dump': dump.join('\n') };
    expect(logged.length, 'the scenario produced log lines to search').toBeGreaterThan(0);
    for (const [where, text] of Object.entries(haystacks)) {
      for (const [what, value] of Object.entries(secrets)) {
        expect.soft(text.includes(value), `${what} found in ${where}`).toBe(false);
        // bytea columns are dumped as hex: the key stored as raw bytes would show here.
        expect.soft(text.includes(Buffer.from(value).toString('hex')), `${what} (hex) found in ${where}`).toBe(false);
      }
    }

    // What is stored instead: the HMAC-SHA-256 of the key under API_KEY_SECRET.
    const { rows } = await db.pool.query<{ key_hash: Buffer; lookup: string; last4: string }>(
      'SELECT key_hash, lookup, last4 FROM api_keys WHERE id = $1',
      [minted.body.id],
    );
    expect(rows[0].key_hash.equals(createHmac('sha256', TEST_API_KEY_SECRET).update(key).digest())).toBe(true);
    expect(key).toContain(rows[0].lookup);
    expect(key.endsWith(rows[0].last4)).toBe(true);
  });
});
