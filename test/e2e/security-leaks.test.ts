import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DataSource } from 'typeorm';
import { createApp } from '../../src/bootstrap.js';
import { postgresOptions } from '../../src/database/data-source-options.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ApiClient } from '../support/http.js';
import { LogCapture } from '../support/log-capture.js';
import { Seeder, TEST_API_KEY_SECRET, TEST_SESSION_SECRET } from '../support/seed.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { testConfig } from '../support/test-app.js';

/**
 * Keys, JWTs and secrets never reach logs, error bodies or the database in clear. The app runs
 * with its own logger (every Nest log and request line, at LOG_LEVEL=trace, into a capture);
 * whatever else writes to the console (TypeORM's error log) is captured too.
 */
describe('secrets', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let app: Awaited<ReturnType<typeof createApp>>;
  let api: ApiClient;
  let seed: Seeder;
  const logs = new LogCapture();
  const logged: string[] = [];
  const spies: Array<{ mockRestore(): void }> = [];

  beforeAll(async () => {
    for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
      spies.push(
        vi
          .spyOn(console, method)
          .mockImplementation((...parts: unknown[]) => void logged.push(parts.map(String).join(' '))),
      );
    }
    db = await createTestDatabase();
    proxy = await TcpProxy.start(db.url);
    const url = proxy.urlFor(db.url);
    const config = testConfig(url, {
      LOG_LEVEL: 'trace',
      DB_CONNECT_TIMEOUT_MS: '500',
      DB_STATEMENT_TIMEOUT_MS: '1000',
    });
    app = await createApp(config, {
      logDestination: logs,
      dataSource: () => new DataSource(postgresOptions(config, url)).initialize(),
    });
    await app.listen(0, '127.0.0.1');
    api = new ApiClient(`http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`);
    seed = new Seeder(db.pool);
  });
  afterAll(async () => {
    await app?.close();
    await proxy?.close();
    await db?.drop();
    for (const spy of spies) spy.mockRestore();
  });

  it('never reach logs, error bodies or the database in clear, through a day of normal use, abuse and an outage', async () => {
    const w = await seed.world('owner');
    const bodies: string[] = [];
    const keep = async <T extends { text: string; headers: Headers }>(p: Promise<T>): Promise<T> => {
      const r = await p;
      bodies.push(r.text, JSON.stringify([...r.headers.entries()]));
      return r;
    };

    const minted = await api.post('/api-keys', w.session, {
      org_id: w.orgId,
      name: 'ci',
      scopes: ['decisions:read', 'decisions:write'],
    });
    expect(minted.status).toBe(201);
    const key: string = minted.body.key;
    const secretPart = key.slice('svc_live_'.length + 13, -6);
    expect(secretPart).toHaveLength(32);

    // Use, misuse and mistakes; every answer but the mint's is kept to be searched.
    await keep(api.get('/me', key));
    await keep(api.get('/usage', key));
    await keep(api.get('/api-keys', w.session));
    await keep(api.get('/api-keys', key));
    await keep(api.post('/api-keys', key, { org_id: w.orgId }));
    await keep(api.get('/me', key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a')));
    await keep(api.get('/me', `${key}x`));
    await keep(api.get('/me', `${w.session}x`));
    await keep(api.get('/me', w.session, { 'x-org-id': key }));
    await keep(api.get(`/${key}`, w.session));
    await keep(api.get(`/api-keys/${w.session}`, w.session));
    await keep(api.delete(`/api-keys/${key}`, w.session));
    await keep(api.get(`/api-keys?org_id=${key}`, w.session));
    await keep(api.post('/api-keys', w.session, { org_id: w.orgId, key, token: w.session }));
    await keep(api.request('POST', '/api-keys', { token: w.session, rawBody: `{"org_id":"${key}"` }));

    // An outage makes the database layer log its failures.
    await proxy.refuse();
    await keep(api.get('/me', key));
    await keep(api.get('/me', w.session));
    await keep(api.post('/api-keys', w.session, { org_id: w.orgId }));
    await proxy.restore();
    for (let i = 0; i < 50 && (await api.get('/me', key)).status !== 200; i++)
      await new Promise((r) => setTimeout(r, 100));

    await keep(api.delete(`/api-keys/${minted.body.id}`, w.session));
    await keep(api.get('/me', key));
    await keep(api.get('/api-keys', w.session));

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

    const haystacks = {
      logs: [...logs.lines, ...logged].join('\n'),
      'response bodies and headers': bodies.join('\n'),
      'database dump': dump.join('\n'),
    };
    expect(logs.lines.length, 'the scenario produced log lines to search').toBeGreaterThan(20);
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
