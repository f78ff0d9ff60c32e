import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEnvironment } from '../../src/config/app-config.js';
import { TestClock } from '../support/clock.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import type { ApiResponse } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * Failed authentication is throttled per client address (decisions.md: 30 failures a minute by
 * default, AUTH_FAILURE_LIMIT). Distinct clients are simulated with X-Forwarded-For on apps that
 * trust the proxy (TRUST_PROXY); the window runs on an injected clock.
 */
const BAD = 'svc_live_not-a-real-key';

function expectThrottled(res: ApiResponse, where = ''): number {
  expect(res.status, where).toBe(429);
  expect(res.body, where).toEqual({
    statusCode: 429,
    error: 'Too Many Requests',
    message: 'Too many failed authentication attempts from this address; retry later',
    budget: 'auth_failures',
    retry_after: expect.any(Number),
  });
  const retryAfter = Number(res.headers.get('retry-after'));
  expect((res.body as { retry_after: number }).retry_after, where).toBe(retryAfter);
  expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`).toBe(true);
  return retryAfter;
}

describe('throttling of failed authentication', () => {
  let db: TestDatabase;
  const clock = new TestClock('2026-03-01T12:00:00Z');
  let proxied: TestApp;
  let key: string;
  let session: string;

  const from = (app: TestApp, forwardedFor: string | undefined, token: string, path = '/me') =>
    app.api.get(path, token, forwardedFor ? { 'x-forwarded-for': forwardedFor } : {});

  async function exhaust(app: TestApp, forwardedFor: string | undefined, limit: number): Promise<void> {
    for (let i = 0; i < limit; i++) {
      const res = await from(app, forwardedFor, BAD);
      expect(res.status, `failure ${i + 1} of ${limit} is still answered 401`).toBe(401);
    }
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    proxied = await startTestApp({ db, clock, env: { AUTH_FAILURE_LIMIT: '5', TRUST_PROXY: 'true' } });
    const w = await proxied.seed.world('owner');
    session = w.session;
    key = (await proxied.api.post('/api-keys', w.session, { org_id: w.orgId })).body.key;
  });
  afterAll(async () => {
    await proxied?.close();
    await db?.drop();
  });

  it('defaults to 30 failures a minute when AUTH_FAILURE_LIMIT is not set', () => {
    expect(loadEnvironment({}).AUTH_FAILURE_LIMIT).toBe(30);
  });

  it('answers 429 with Retry-After once an address has used up its failures, even to a valid credential', async () => {
    const client = '203.0.113.10';
    await exhaust(proxied, client, 5);
    expectThrottled(await from(proxied, client, BAD));
    expectThrottled(await from(proxied, client, key), 'a valid key from a throttled address');
    expectThrottled(await from(proxied, client, session, '/api-keys'), 'a valid session from a throttled address');
  });

  it('leaves valid traffic from other clients untouched while one client is throttled', async () => {
    const attacker = '203.0.113.11';
    await exhaust(proxied, attacker, 5);
    expectThrottled(await from(proxied, attacker, BAD));

    expect((await from(proxied, '198.51.100.1', key)).status).toBe(200);
    expect((await from(proxied, '198.51.100.1', session, '/api-keys')).status).toBe(200);
    expect((await from(proxied, '198.51.100.2', BAD)).status, 'another client still gets its own budget').toBe(401);
  });

  it('does not count successful requests', async () => {
    const client = '203.0.113.12';
    for (let i = 0; i < 40; i++) expect((await from(proxied, client, i % 2 ? key : session)).status).toBe(200);
    await exhaust(proxied, client, 5);
    expectThrottled(await from(proxied, client, BAD));
  });

  it('lifts the throttle when the one-minute window ends, counting Retry-After down on the way', async () => {
    const client = '203.0.113.13';
    await exhaust(proxied, client, 5);
    expect(expectThrottled(await from(proxied, client, key))).toBe(60);
    clock.advance(30_000);
    expect(expectThrottled(await from(proxied, client, key))).toBe(30);
    clock.advance(29_500);
    expect(expectThrottled(await from(proxied, client, key))).toBe(1);
    clock.advance(500);
    expect((await from(proxied, client, key)).status).toBe(200);
    expect((await from(proxied, client, BAD)).status, 'a fresh window, a fresh budget').toBe(401);
  });

  it('counts an IPv6 client by its /64 network, and an IPv4-mapped address as its IPv4 address', async () => {
    await exhaust(proxied, '2001:db8:1:2::1', 5);
    expectThrottled(await from(proxied, '2001:db8:1:2::ffff', BAD), 'another address of the same /64');
    expect((await from(proxied, '2001:db8:1:3::1', BAD)).status, 'a neighbouring /64').toBe(401);

    await exhaust(proxied, '203.0.113.14', 5);
    expectThrottled(await from(proxied, '::ffff:203.0.113.14', BAD));
  });

  it('shares the count between instances on one database: a second replica refuses an address the first used up', async () => {
    const replica = await startTestApp({ db, clock, env: { AUTH_FAILURE_LIMIT: '5', TRUST_PROXY: 'true' } });
    try {
      const client = '203.0.113.15';
      await exhaust(proxied, client, 5);
      expectThrottled(await from(proxied, client, BAD));
      // The shared count is written behind each 401; the replica reads it on the address's first request.
      await new Promise((r) => setTimeout(r, 200));
      expectThrottled(await from(replica, client, BAD));
    } finally {
      await replica.close();
    }
  });

  describe('and the client address behind a proxy', () => {
    it('ignores X-Forwarded-For without TRUST_PROXY, so spoofed addresses share the default budget of 30', async () => {
      const direct = await startTestApp({ db, clock, env: { AUTH_FAILURE_LIMIT: undefined, TRUST_PROXY: undefined } });
      try {
        for (let i = 0; i < 30; i++) expect((await from(direct, `192.0.2.${i + 1}`, BAD)).status).toBe(401);
        expectThrottled(await from(direct, '192.0.2.200', BAD));
        // Which is also why a service behind a proxy needs TRUST_PROXY: every client shares the proxy's address.
        expectThrottled(await from(direct, '192.0.2.201', key));
      } finally {
        await direct.close();
      }
    });

    it('with TRUST_PROXY listing the proxies, takes the nearest untrusted hop, so a forged left-most entry does not help', async () => {
      const behind = await startTestApp({
        db,
        clock,
        env: { AUTH_FAILURE_LIMIT: '3', TRUST_PROXY: '127.0.0.1, 10.0.0.0/8' },
      });
      try {
        // Our proxy (10.0.0.7) appends the real client; the client forges whatever comes before it.
        for (let i = 0; i < 3; i++)
          expect((await from(behind, `192.0.2.${i + 1}, 198.51.100.9, 10.0.0.7`, BAD)).status).toBe(401);
        expectThrottled(await from(behind, '192.0.2.99, 198.51.100.9, 10.0.0.7', BAD));
        expect((await from(behind, '198.51.100.10, 10.0.0.7', key)).status, 'another real client').toBe(200);
      } finally {
        await behind.close();
      }
    });

    it('with TRUST_PROXY listing other proxies only, ignores X-Forwarded-For from an untrusted peer', async () => {
      const strict = await startTestApp({ db, clock, env: { AUTH_FAILURE_LIMIT: '3', TRUST_PROXY: '10.0.0.0/8' } });
      // The test above used up 127.0.0.1's failures in this window, and counts are shared: a fresh window.
      clock.advance(60_000);
      try {
        for (let i = 0; i < 3; i++) expect((await from(strict, `192.0.2.${i + 1}`, BAD)).status).toBe(401);
        expectThrottled(await from(strict, '192.0.2.50', BAD));
      } finally {
        await strict.close();
      }
    });
  });
});
