import { ModulesContainer } from '@nestjs/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../support/clock.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { UsageService } from '../../src/index.js';
import { Seeder } from '../support/seed.js';
import { PLATFORMS, startHost, type HostApp } from './support/host-app.js';

// 23:59:00 UTC: the daily meters reset in exactly 60 seconds.
const ONE_MINUTE_TO_MIDNIGHT = '2031-03-14T23:59:00.000Z';

describe.each(PLATFORMS)('a host on %s that imports KeysUsageIdentityModule', (platform) => {
  let db: TestDatabase;
  let seed: Seeder;
  let host: HostApp;
  const clock = new TestClock(ONE_MINUTE_TO_MIDNIGHT);

  beforeAll(async () => {
    db = await createTestDatabase();
    seed = new Seeder(db.pool);
    host = await startHost({ platform, databaseUrl: db.url, clock });
  });
  afterAll(async () => {
    await host?.close();
    await db?.drop();
  });

  async function mint(session: string, orgId: string, scopes: string[]): Promise<{ id: string; key: string }> {
    const res = await host.api.post('/api-keys', session, { org_id: orgId, name: `${platform} key`, scopes });
    expect(res.status).toBe(201);
    // The host registers no header hook of its own: the module keeps the one-time key out of caches.
    expect(res.headers.get('cache-control')).toBe('no-store');
    return res.body;
  }

  async function capturesUsed(orgId: string): Promise<number> {
    // Once the host's counts are written (leased charging writes them behind the answers).
    await host.app.get(UsageService, { strict: false }).settle();
    const { rows } = await db.pool.query<{ captures: number }>(
      `SELECT captures FROM usage_counters WHERE org_id = $1`,
      [orgId],
    );
    return rows[0]?.captures ?? 0;
  }

  it('lets a session mint a write key through the mounted POST /api-keys that then reaches the host route and is charged', async () => {
    const w = await seed.world('owner');
    const { key } = await mint(w.session, w.orgId, ['decisions:read', 'decisions:write']);

    const res = await host.api.post('/decisions', key, { title: 'use PostgreSQL' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ captured: 'use PostgreSQL', org_id: w.orgId, by: 'api_key' });

    expect(await capturesUsed(w.orgId)).toBe(1);
    const usage = await host.api.get('/usage', key);
    expect(usage.status).toBe(200);
    expect(usage.body.captures).toEqual({ used: 1, limit: 2 });
  });

  it('refuses a read-only key on the host route with 403 and charges nothing', async () => {
    const w = await seed.world('owner');
    const { key } = await mint(w.session, w.orgId, ['decisions:read']);

    const res = await host.api.post('/decisions', key, { title: 'x' });
    expect(res.status).toBe(403);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(res.body).toMatchObject({ statusCode: 403, message: expect.stringContaining('decisions:write') });
    expect(await capturesUsed(w.orgId)).toBe(0);
  });

  it('answers 429 with Retry-After until the next UTC midnight once the meter is exhausted, recording nothing more', async () => {
    const w = await seed.world('owner');
    const { key } = await mint(w.session, w.orgId, ['decisions:write']);
    for (let i = 0; i < 2; i++) expect((await host.api.post('/decisions', key, { title: `d${i}` })).status).toBe(201);

    const refused = await host.api.post('/decisions', key, { title: 'one too many' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(refused.body).toMatchObject({
      statusCode: 429,
      error: 'Too Many Requests',
      message: expect.stringContaining('captures'),
      budget: 'usage:captures',
      retry_after: 60,
    });
    expect(await capturesUsed(w.orgId)).toBe(2);
  });

  it('answers 401 with WWW-Authenticate to a key once it is revoked', async () => {
    const w = await seed.world('owner');
    const { id, key } = await mint(w.session, w.orgId, ['decisions:write']);
    expect((await host.api.post('/decisions', key, { title: 'before' })).status).toBe(201);

    expect((await host.api.delete(`/api-keys/${id}`, w.session)).status).toBe(204);
    const res = await host.api.post('/decisions', key, { title: 'after' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token"/);
    expect(res.body).toMatchObject({ statusCode: 401, message: 'The credential is invalid, expired or revoked' });
    expect(await capturesUsed(w.orgId)).toBe(1);
  });

  it('answers 401 with WWW-Authenticate: Bearer on the host route when no credential is sent', async () => {
    const res = await host.api.post('/decisions', undefined, { title: 'anonymous' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(res.body).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
  });

  it('accepts a session on the host route too, charging the org it names', async () => {
    const w = await seed.world('member');
    const res = await host.api.post('/decisions', w.session, { title: 'from the browser' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ captured: 'from the browser', org_id: w.orgId, by: 'session' });
    expect(await capturesUsed(w.orgId)).toBe(1);
  });

  it("leaves the host's unguarded routes alone: no credential needed, a bad one ignored, bodies untouched", async () => {
    const health = await host.api.get('/health');
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ ok: true });
    expect(health.headers.get('www-authenticate')).toBeNull();

    const withJunk = await host.api.get('/health', 'svc_live_not-a-real-key');
    expect(withJunk.status).toBe(200);

    // No validation pipe of ours applies: unknown fields pass through to the host's handler.
    const echo = await host.api.post('/echo', undefined, { anything: [1, 'two'], nested: { ok: true } });
    expect(echo.status).toBe(200);
    expect(echo.body).toEqual({ echoed: { anything: [1, 'two'], nested: { ok: true } } });
  });

  it('registers no app-wide guard, filter, pipe or interceptor in the host, and runs on the adapter asked for', () => {
    const appWide = [...host.app.get(ModulesContainer).values()].flatMap((m) =>
      [...m.providers.keys()].map(String).filter((token) => /^APP_(GUARD|FILTER|PIPE|INTERCEPTOR)/.test(token)),
    );
    expect(appWide).toEqual([]);
    expect(host.app.getHttpAdapter().getType()).toBe(platform);
  });

  it("keeps the module's own routes at the root when no prefix is given, and serves /me to a key", async () => {
    const w = await seed.world('viewer');
    const { key } = await mint(w.session, w.orgId, []);
    const me = await host.api.get('/me', key);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      user_id: w.userId,
      org_id: w.orgId,
      scopes: ['decisions:read'],
      org_role: 'viewer',
    });
  });

  it("answers GET /api-keys in the org's API version (the contract's unless moved), or the one Api-Version names", async () => {
    const w = await seed.world('owner');
    await mint(w.session, w.orgId, []);
    // The contract: the body gains next_cursor only when more keys exist.
    const contract = await host.api.get('/api-keys', w.session);
    expect(contract.status).toBe(200);
    expect(Object.keys(contract.body)).toEqual(['keys']);
    await mint(w.session, w.orgId, []);
    expect(typeof (await host.api.get('/api-keys?limit=1', w.session)).body.next_cursor).toBe('string');

    const newest = await host.api.get('/api-keys', w.session, { 'Api-Version': '2026-11-26' });
    expect(newest.status).toBe(200);
    expect(newest.body).toEqual({ keys: expect.any(Array), next_cursor: null });
    expect(newest.body.keys).toHaveLength(2);

    await db.pool.query(`UPDATE orgs SET api_version = '2026-11-26' WHERE id = $1`, [w.orgId]);
    await expect.poll(async () => (await host.api.get('/api-keys', w.session)).body.next_cursor).toBeNull();

    const bad = await host.api.get('/api-keys', w.session, { 'Api-Version': '2026-11-15' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({
      statusCode: 400,
      message: expect.stringContaining('Api-Version header "2026-11-15" is not a version of this API'),
    });
  });

  it("shapes the module's errors as JSON through Nest's default filter: 400 for a bad or malformed body, 403 for a key on a session-only route, 404 for a foreign org", async () => {
    const w = await seed.world('owner');
    const bad = await host.api.post('/api-keys', w.session, { org_id: 'nope' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ statusCode: 400, message: 'org_id must be a UUID' });

    const malformed = await host.api.request('POST', '/api-keys', { token: w.session, rawBody: '{"org_id":' });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ statusCode: 400 });

    const { key } = await mint(w.session, w.orgId, ['decisions:read']);
    const keyOnLifecycle = await host.api.get('/api-keys', key);
    expect(keyOnLifecycle.status).toBe(403);
    expect(keyOnLifecycle.body).toMatchObject({ statusCode: 403, error: 'Forbidden' });

    const other = await seed.org();
    const foreign = await host.api.post('/api-keys', w.session, { org_id: other });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toMatchObject({ statusCode: 404, message: 'Organisation not found' });
  });
});
