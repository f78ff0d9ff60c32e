import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/auth/api-key-format.js';
import { TestClock } from '../support/clock.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startTestApp } from '../support/test-app.js';

/*
 * A hostile tenant with the lowest role tries to exhaust the service; this file: bursts of bad tokens and forged proxy headers: the failure throttle holds under concurrency and across instances.
 */

describe('throttles that hold under concurrency and across instances', () => {
  let db: TestDatabase;
  const clock = new TestClock('2026-05-01T12:00:00Z');

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** A token of the key format with a valid checksum, so it is looked up: a real verification each. */
  const badKey = () => generateApiKey().key;

  it('lets at most the limit of 1,000 concurrent bad tokens from one address through to verification', async () => {
    const t = await startTestApp({ db, clock, env: { AUTH_FAILURE_LIMIT: '30' } });
    try {
      const answers = await Promise.all(
        Array.from({ length: 1000 }, (_, i) => t.api.get('/me', i % 2 ? badKey() : `not-a-jwt-${i}`)),
      );
      const verified = answers.filter((a) => a.status === 401).length;
      expect(verified).toBeGreaterThan(0);
      expect(verified).toBeLessThanOrEqual(30);
      expect(
        answers.filter((a) => a.status !== 401).every((a) => a.status === 429 && a.headers.get('retry-after')),
      ).toBe(true);
    } finally {
      await t.close();
    }
    clock.advance(60_000);
  });

  it('shares the count between two instances on one database, also under a concurrent burst on both', async () => {
    const a = await startTestApp({ db, clock, env: { AUTH_FAILURE_LIMIT: '10' } });
    const b = await startTestApp({ db, clock, env: { AUTH_FAILURE_LIMIT: '10' } });
    try {
      const burst = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? a : b).api.get('/me', badKey())));
      expect(burst.filter((r) => r.status === 401).length).toBeLessThanOrEqual(20);
      // The shared count is written behind the 401s; once it has landed both instances refuse.
      const { rows } = await db.pool.query(`SELECT max(points) AS points FROM auth_failure_counts`);
      expect(Number(rows[0].points)).toBeGreaterThanOrEqual(10);
      expect((await a.api.get('/me', badKey())).status).toBe(429);
      expect((await b.api.get('/me', badKey())).status).toBe(429);
      clock.advance(60_000);
      // Sequentially: what one instance used up, the other sees on the address's first request.
      for (let i = 0; i < 10; i++) expect((await a.api.get('/me', badKey())).status).toBe(401);
      await new Promise((r) => setTimeout(r, 200));
      expect((await b.api.get('/me', badKey())).status).toBe(429);
    } finally {
      await a.close();
      await b.close();
    }
    clock.advance(60_000);
  });

  it('takes the client address from the trusted hops only: addresses appended in front cannot steer it', async () => {
    const t = await startTestApp({ db, clock, env: { AUTH_FAILURE_LIMIT: '5', TRUST_PROXY: '1' } });
    try {
      // One proxy (the test's loopback peer) appends the real client; the client forges what precedes it.
      const statuses = [];
      for (let i = 0; i < 8; i++) {
        statuses.push(
          (await t.api.get('/me', badKey(), { 'x-forwarded-for': `10.9.${i}.1, 192.0.2.${i}, 198.51.100.77` })).status,
        );
      }
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
      expect(
        (await t.api.get('/me', badKey(), { 'x-forwarded-for': '198.51.100.78' })).status,
        'another real client',
      ).toBe(401);
    } finally {
      await t.close();
    }
  });

  it('keeps serving a credential that verified recently from an address while that address is throttled (one NAT, one office)', async () => {
    const t = await startTestApp({ db, clock, env: { AUTH_FAILURE_LIMIT: '5', TRUST_PROXY: '1' } });
    try {
      const office = { 'x-forwarded-for': '203.0.113.200' };
      const colleague = await t.seed.world('owner');
      const newcomer = await t.seed.world('owner');
      const key = (await t.api.post('/api-keys', colleague.session, { org_id: colleague.orgId })).body.key;
      expect((await t.api.get('/me', key, office)).status).toBe(200);
      expect((await t.api.get('/me', colleague.session, office)).status).toBe(200);
      for (let i = 0; i < 5; i++) expect((await t.api.get('/me', badKey(), office)).status).toBe(401);
      expect((await t.api.get('/me', badKey(), office)).status, 'the noisy client').toBe(429);
      expect((await t.api.get('/me', key, office)).status, 'a key that verified from the office').toBe(200);
      expect(
        (await t.api.get('/me', colleague.session, office)).status,
        'a session that verified from the office',
      ).toBe(200);
      expect((await t.api.get('/me', newcomer.session, office)).status, 'a credential never seen from the office').toBe(
        429,
      );
      expect((await t.api.get('/me', key, { 'x-forwarded-for': '203.0.113.201' })).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});
