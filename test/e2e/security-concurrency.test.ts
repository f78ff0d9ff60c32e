import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * Revocation under fire and minting in parallel. Times are the test process's monotonic clock:
 * a use counts as "after the revoke" only if it was sent after the 204 had been received, so
 * no ordering is assumed that the network could not guarantee.
 */
describe('concurrency', () => {
  let t: TestApp;
  let replica: TestApp;
  let w: { orgId: string; userId: string; session: string };

  beforeAll(async () => {
    t = await startTestApp();
    // A second instance on the same database: a revoke seen by one must hold on the other at once.
    replica = await startTestApp({ db: t.db });
    w = await t.seed.world('owner');
  });
  afterAll(async () => {
    await replica?.close();
    await t?.close();
  });

  it('never lets a use through after the revoke answered 204, on either instance', async () => {
    for (let round = 0; round < 3; round++) {
      const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: `race ${round}` });
      expect(minted.status).toBe(201);
      const key: string = minted.body.key;

      const uses: Array<{ sentAt: number; status: number; instance: number }> = [];
      let stopAt = Infinity;
      let revokedAt = Infinity;
      const worker = async (instance: number) => {
        const api = instance === 0 ? t.api : replica.api;
        while (performance.now() < stopAt) {
          const sentAt = performance.now();
          const res = await api.get('/me', key);
          uses.push({ sentAt, status: res.status, instance });
        }
      };
      const workers = Array.from({ length: 8 }, (_, i) => worker(i % 2));

      // Let uses succeed for a moment, revoke, then keep firing for a while after the 204.
      while (uses.filter((u) => u.status === 200).length < 20) await new Promise((r) => setTimeout(r, 5));
      const revoke = await t.api.delete(`/api-keys/${minted.body.id}`, w.session);
      revokedAt = performance.now();
      expect(revoke.status).toBe(204);
      while (uses.filter((u) => u.sentAt > revokedAt).length < 80) await new Promise((r) => setTimeout(r, 5));
      stopAt = performance.now();
      await Promise.all(workers);

      const after = uses.filter((u) => u.sentAt > revokedAt);
      expect(after.length).toBeGreaterThanOrEqual(80);
      expect(after.filter((u) => u.instance === 1).length, 'uses on the replica after the revoke').toBeGreaterThan(0);
      expect(
        after.filter((u) => u.status !== 401),
        `round ${round}: uses sent after the 204 that were not refused`,
      ).toEqual([]);
      expect(uses.every((u) => u.status === 200 || u.status === 401)).toBe(true);
    }
  });

  it('mints many keys at once without a collision, and each one works', async () => {
    const before = (await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys')).rows[0].n;
    const sessions = [w, await t.seed.world('member'), await t.seed.world('admin')];
    const results = await Promise.all(
      Array.from({ length: 45 }, (_, i) => {
        const who = sessions[i % sessions.length];
        const api = i % 2 ? replica.api : t.api;
        return api.post('/api-keys', who.session, {
          org_id: who.orgId,
          name: `parallel ${i}`,
          scopes: ['decisions:read'],
        });
      }),
    );
    expect(results.map((r) => r.status)).toEqual(results.map(() => 201));
    const ids = new Set(results.map((r) => r.body.id));
    const keys = new Set(results.map((r) => r.body.key));
    const lookups = new Set(results.map((r) => r.body.lookup));
    expect([ids.size, keys.size, lookups.size]).toEqual([45, 45, 45]);
    const after = (await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys')).rows[0].n;
    expect(after).toBe(before + 45);

    const uses = await Promise.all(results.map((r, i) => (i % 2 ? t.api : replica.api).get('/me', r.body.key)));
    expect(uses.map((u) => u.status)).toEqual(uses.map(() => 200));
    expect(uses.map((u) => u.body.user_id)).toEqual(results.map((_, i) => sessions[i % sessions.length].userId));
  });

  it('answers 204 to every one of many simultaneous revokes of one key and keeps the first revoked_at', async () => {
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId });
    const revokes = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? replica.api : t.api).delete(`/api-keys/${minted.body.id}`, w.session),
      ),
    );
    expect(revokes.map((r) => r.status)).toEqual(revokes.map(() => 204));
    const first = (await t.db.pool.query('SELECT revoked_at FROM api_keys WHERE id = $1', [minted.body.id])).rows[0]
      .revoked_at;
    expect(first).toBeInstanceOf(Date);
    expect((await t.api.delete(`/api-keys/${minted.body.id}`, w.session)).status).toBe(204);
    const again = (await t.db.pool.query('SELECT revoked_at FROM api_keys WHERE id = $1', [minted.body.id])).rows[0]
      .revoked_at;
    expect(again).toEqual(first);
    expect((await replica.api.get('/me', minted.body.key)).status).toBe(401);
  });
});
