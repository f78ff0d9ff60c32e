import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CoherenceLease } from '../../src/coherence/coherence-lease.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import type { ApiResponse } from '../support/http.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * The app talks to PostgreSQL through a TCP proxy the test can break (the shared server is
 * never stopped). Small connect/statement timeouts make an outage show within a second or two.
 */
const OUTAGE_BUDGET_MS = 5_000;

describe('a database outage', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let t: TestApp;
  let w: { orgId: string; session: string };
  let key: string;
  let keyId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    proxy = await TcpProxy.start(db.url);
    t = await startTestApp({
      db: { ...db, url: proxy.urlFor(db.url) },
      // A low failure limit proves that outage answers are not counted as failed authentications.
      env: { DB_CONNECT_TIMEOUT_MS: '500', DB_STATEMENT_TIMEOUT_MS: '1000', AUTH_FAILURE_LIMIT: '3' },
    });
    w = await t.seed.world('owner');
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId, scopes: ['decisions:read'] });
    expect(minted.status).toBe(201);
    key = minted.body.key;
    keyId = minted.body.id;
  });

  afterEach(async () => {
    await proxy.restore();
  });

  afterAll(async () => {
    await t?.close();
    await proxy?.close();
    await db?.drop();
  });

  /** Every route that needs the database, through both credentials and the service layer. */
  const calls = (revokeId: string): Array<[string, () => Promise<ApiResponse>]> => [
    ['GET /me with an API key (key verification)', () => t.api.get('/me', key)],
    ['GET /me with a session (org resolution)', () => t.api.get('/me', w.session)],
    ['GET /usage with an API key', () => t.api.get('/usage', key)],
    ['POST /api-keys', () => t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'during outage' })],
    ['GET /api-keys', () => t.api.get('/api-keys', w.session)],
    ['DELETE /api-keys/{id}', () => t.api.delete(`/api-keys/${revokeId}`, w.session)],
  ];

  async function expectAllUnavailable(revokeId: string): Promise<void> {
    for (const [label, call] of calls(revokeId)) {
      const started = performance.now();
      const res = await call();
      const elapsed = performance.now() - started;
      expect.soft(res.status, label).toBe(503);
      expect.soft(res.body, label).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: 'The database is unavailable; retry shortly',
      });
      expect.soft(res.headers.get('www-authenticate'), `${label}: an outage is not a credential problem`).toBeNull();
      // A failover takes seconds: the client is told when to try again.
      expect.soft(res.headers.get('retry-after'), label).toBe('2');
      expect.soft(res.headers.get('x-content-type-options'), label).toBe('nosniff');
      expect.soft(res.headers.get('cache-control'), label).toBe('no-store');
      expect.soft(elapsed, `${label} answered within ${OUTAGE_BUDGET_MS} ms`).toBeLessThan(OUTAGE_BUDGET_MS);
    }
  }

  /**
   * A verification cached under a lease needs no database: the instance may answer it until it
   * notices the cut (a dropped LISTEN connection at once, a silent one within one lease length).
   */
  async function leaseLapsed(): Promise<void> {
    const lease = t.app.get(CoherenceLease, { strict: false });
    await expect
      .poll(() => lease.usable(), { timeout: 15_000, interval: 20, message: 'the verification lease lapsed' })
      .toBe(false);
  }

  async function expectRecovered(): Promise<void> {
    // Recovery is the pool's job: poll (no restart, no reconnect call) until the key verifies again.
    await expect.poll(async () => (await t.api.get('/me', key)).status, { timeout: 20_000, interval: 200 }).toBe(200);
    expect((await t.api.get('/me', w.session)).status).toBe(200);
    expect((await t.api.get('/usage', key)).status).toBe(200);
    expect((await t.api.get('/api-keys', w.session)).status).toBe(200);
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'after outage' });
    expect(minted.status).toBe(201);
    expect((await t.api.get('/me', minted.body.key)).status).toBe(200);
  }

  async function spareKeyId(): Promise<string> {
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'to revoke' });
    expect(minted.status).toBe(201);
    return minted.body.id;
  }

  async function keyRows(): Promise<Array<{ id: string; revoked: boolean }>> {
    const { rows } = await db.pool.query<{ id: string; revoked: boolean }>(
      `SELECT id, revoked_at IS NOT NULL AS revoked FROM api_keys ORDER BY id`,
    );
    return rows;
  }

  it('answers 503 when connections are refused, writes nothing, and recovers by itself when the database is back', async () => {
    const revokeId = await spareKeyId();
    expect((await t.api.get('/me', key)).status).toBe(200);
    const before = await keyRows();
    await proxy.refuse();
    await leaseLapsed();

    await expectAllUnavailable(revokeId);

    await proxy.restore();
    await expectRecovered();
    // Nothing reached the database: no key was minted or revoked by the refused calls.
    const after = await keyRows();
    expect(after.filter((r) => before.some((b) => b.id === r.id))).toEqual(before);
    expect(after.length).toBe(before.length + 1); // the mint made after recovery
  });

  it('answers 503 within the timeouts when the database accepts connections but never answers, and recovers by itself', async () => {
    const revokeId = await spareKeyId();
    expect((await t.api.get('/me', key)).status).toBe(200);
    proxy.blackhole();
    await leaseLapsed();

    // Statements already written to a black-holed connection may still run when it heals (as over
    // TCP): the 503 says "outcome unknown, retry", and revoke is idempotent. SECURITY.md says so.
    await expectAllUnavailable(revokeId);

    await proxy.restore();
    await expectRecovered();
  });
});
