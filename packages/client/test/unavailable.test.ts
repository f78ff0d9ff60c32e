import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/factories.js';
import { TcpProxy } from '../../../test/support/tcp-proxy.js';
import { startTestApp, type TestApp } from '../../../test/support/test-app.js';
import { ApiError, KeysUsageIdentityClient, type RetryEvent } from '../src/index.js';

/**
 * The client's retry of a real 503: the service reaches PostgreSQL through a proxy the test can
 * cut, answers 503 (without Retry-After) while it is cut, and recovers by itself once it is back.
 */
describe('the typed client retrying a 503 from the running service', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let t: TestApp;
  let owner: { orgId: string; session: string };

  beforeAll(async () => {
    db = await createTestDatabase();
    proxy = await TcpProxy.start(db.url);
    t = await startTestApp({
      db: { ...db, url: proxy.urlFor(db.url) },
      env: { DB_CONNECT_TIMEOUT_MS: '500', DB_STATEMENT_TIMEOUT_MS: '1000' },
    });
    owner = await t.seed.world('owner');
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
    await db?.drop();
  });

  it('backs off while the database is down and returns the answer once it is back', async () => {
    const retries: RetryEvent[] = [];
    const client = new KeysUsageIdentityClient({
      baseUrl: t.url,
      credential: owner.session,
      retry: {
        maxRetries: 6,
        onRetry: (event) => {
          retries.push(event);
          // The database comes back after the service's first 503.
          if (event.attempt === 1) void proxy.restore();
        },
      },
    });
    await proxy.refuse();
    const page = await client.keys.list();
    expect(page.keys).toEqual([]);
    expect(retries.length).toBeGreaterThanOrEqual(1);
    // The service's 503 says when to come back (Retry-After: 2): the client waits that long, not its own backoff.
    expect(retries[0]).toMatchObject({ attempt: 1, status: 503, method: 'GET', waitMs: 2000 });
    expect(retries.every((r) => r.waitMs === 2000)).toBe(true);
  });

  it("does not send a mint again after a 503 (its outcome may be unknown), and the 503 is an ApiError carrying the service's body", async () => {
    await proxy.refuse();
    try {
      const retries: RetryEvent[] = [];
      const client = new KeysUsageIdentityClient({
        baseUrl: t.url,
        credential: owner.session,
        retry: { onRetry: (e) => retries.push(e) },
      });
      await expect(client.keys.mint({ org_id: owner.orgId })).rejects.toMatchObject({ status: 503 });
      expect(retries).toEqual([]);
      const error = await new KeysUsageIdentityClient({
        baseUrl: t.url,
        credential: owner.session,
        retry: { maxRetries: 0 },
      }).keys
        .list()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect(error).toMatchObject({
        status: 503,
        retryAfterMs: 2000,
        body: { statusCode: 503, error: 'Service Unavailable' },
      });
    } finally {
      await proxy.restore();
    }
  });
});
