import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PeriodicJobs } from '../../src/common/periodic-jobs.js';
import { TestClock } from '../support/clock.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * A rotated-out secret counts only during its grace period: after it, it neither verifies nor
 * revokes the live key when reported as leaked (POST /credentials/revoke), and it is cleared.
 */
describe('a previous secret after its grace period', () => {
  const clock = new TestClock('2031-09-01T08:00:00.000Z');
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ clock });
  });
  afterAll(async () => t?.close());

  it('neither verifies nor revokes the key, and is cleared by the hourly job', async () => {
    const w = await t.seed.world('owner');
    const old = (await t.api.post('/api-keys', w.session, { org_id: w.orgId })).body;
    const rotated = await t.api.post(`/api-keys/${old.id}/rotate`, w.session, { grace_period_seconds: 60 });
    expect(rotated.status).toBe(201);
    expect((await t.api.get('/me', old.key)).status).toBe(200);

    clock.advance(61_000);
    expect((await t.api.get('/me', old.key)).status).toBe(401);
    // Reported as leaked after the grace, beside a genuine key: once the genuine one is revoked, the
    // report has been handled (the 202 comes first), and the old secret revoked nothing.
    const control = (await t.api.post('/api-keys', w.session, { org_id: w.orgId })).body;
    expect((await t.api.post('/credentials/revoke', undefined, { credentials: [old.key, control.key] })).status).toBe(
      202,
    );
    await expect
      .poll(async () => (await t.api.get('/me', control.key)).status, { timeout: 5_000, interval: 20 })
      .toBe(401);
    expect((await t.api.get('/me', rotated.body.key)).status).toBe(200);
    const [row] = (await t.db.pool.query(`SELECT revoked_at, previous_lookup FROM api_keys WHERE id = $1`, [old.id]))
      .rows;
    expect(row).toEqual({ revoked_at: null, previous_lookup: old.lookup });
    const leaked = (await t.seed.auditEvents(w.orgId)).filter((e) => e.action === 'api_key.revoked_as_leaked');
    expect(leaked.map((e) => e.target_id)).toEqual([control.id]);

    await t.app.get(PeriodicJobs, { strict: false }).runNow('lapsed-previous-secrets');
    const [cleared] = (
      await t.db.pool.query(
        `SELECT previous_lookup, previous_key_hash, previous_expires_at FROM api_keys WHERE id = $1`,
        [old.id],
      )
    ).rows;
    expect(cleared).toEqual({ previous_lookup: null, previous_key_hash: null, previous_expires_at: null });
    expect((await t.api.get('/me', rotated.body.key)).status).toBe(200);
  });

  it('still revokes the key when reported during the grace', async () => {
    const w = await t.seed.world('owner');
    const old = (await t.api.post('/api-keys', w.session, { org_id: w.orgId })).body;
    const rotated = (await t.api.post(`/api-keys/${old.id}/rotate`, w.session, { grace_period_seconds: 60 })).body;
    clock.advance(59_000);
    expect((await t.api.post('/credentials/revoke', undefined, { credentials: [old.key] })).status).toBe(202);
    // The 202 comes before the revocation is written (its time must not tell a genuine key); it follows at once.
    await expect
      .poll(async () => (await t.api.get('/me', rotated.key)).status, { timeout: 5_000, interval: 20 })
      .toBe(401);
  });
});
