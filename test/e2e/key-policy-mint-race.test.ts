import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../support/clock.js';
import { insertKeyRow } from '../support/factories.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const DAY_MS = 86_400_000;
/** The org's key-policy lock as the lifetime cap takes it (src/api-keys/api-key-policy.sql.ts). */
const POLICY_LOCK = `SELECT pg_advisory_xact_lock(hashtextextended('kui.key_policy:' || $1::uuid::text, 0))`;

/**
 * A mint and a PUT of the org's key policy that overlap, interleaved deterministically by holding
 * one side's transaction open in the test: whichever commits first, no key outlives
 * `max_lifetime_days`.
 */
describe('a mint racing a new max_lifetime_days', () => {
  let t: TestApp;
  const clock = new TestClock('2032-04-01T09:00:00.000Z');
  beforeAll(async () => {
    t = await startTestApp({ clock, env: { EVENTS_WORKER: 'false' } });
  });
  afterAll(async () => t?.close());

  /** Whether some session waits for an advisory lock (the other side of the race is blocked). */
  const someoneWaits = async () =>
    (
      await t.db.pool.query(
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      )
    ).rows[0].n > 0;
  const expiryOf = async (id: string) =>
    (await t.db.pool.query(`SELECT created_at, expires_at FROM api_keys WHERE id = $1`, [id])).rows[0] as {
      created_at: Date;
      expires_at: Date | null;
    };

  async function inTransaction(): Promise<pg.PoolClient> {
    const client = await t.db.pool.connect();
    await client.query('BEGIN');
    return client;
  }

  it('caps a mint judged before the policy committed and written after it', async () => {
    const w = await t.seed.world('owner');
    // The PUT, half-way: its policy written, the lock its cap takes held, not yet committed.
    const policyPut = await inTransaction();
    try {
      await policyPut.query(
        `INSERT INTO org_key_policies (org_id, max_lifetime_days, require_expiry, updated_at) VALUES ($1, 30, false, now())`,
        [w.orgId],
      );
      await policyPut.query(POLICY_LOCK, [w.orgId]);
      // Judged against no policy at all, so it is allowed no expiry; its write has to wait.
      const minting = t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'racer' });
      await expect.poll(someoneWaits, { timeout: 10_000 }).toBe(true);
      await policyPut.query('COMMIT');
      const minted = await minting;
      expect(minted.status).toBe(201);
      const key = await expiryOf(minted.body.id);
      expect(key.expires_at?.getTime()).toBe(key.created_at.getTime() + 30 * DAY_MS);
    } finally {
      await policyPut.query('ROLLBACK').catch(() => undefined);
      policyPut.release();
    }
  });

  it('makes a PUT wait for a mint in flight, and caps that key with the others', async () => {
    const w = await t.seed.world('owner');
    // The mint, half-way: its key inserted without expiry, not yet committed.
    const mint = await inTransaction();
    let keyId: string;
    try {
      ({ id: keyId } = await insertKeyRow(mint as unknown as pg.Pool, {
        userId: w.userId,
        orgId: w.orgId,
        createdAt: clock.now(),
      }));
      const putting = t.api.request('PUT', `/orgs/${w.orgId}/key-policy`, {
        token: w.session,
        body: { max_lifetime_days: 30 },
      });
      await expect.poll(someoneWaits, { timeout: 10_000 }).toBe(true);
      await mint.query('COMMIT');
      expect((await putting).status).toBe(200);
    } finally {
      await mint.query('ROLLBACK').catch(() => undefined);
      mint.release();
    }
    const key = await expiryOf(keyId);
    expect(key.expires_at?.getTime()).toBe(key.created_at.getTime() + 30 * DAY_MS);
    const audit = (await t.seed.auditEvents(w.orgId)).find((e) => e.action === 'org.key_policy_updated');
    expect(audit?.details.keys_shortened).toBe(1);
  });

  it('leaves mints that obey the policy as they asked, and mints of one org never wait for each other', async () => {
    const w = await t.seed.world('owner');
    expect(
      (await t.api.request('PUT', `/orgs/${w.orgId}/key-policy`, { token: w.session, body: { max_lifetime_days: 30 } }))
        .status,
    ).toBe(200);
    // A colleague's mint in flight in the same org (another count row: only the policy lock is shared).
    const colleague = await t.seed.colleague(w.orgId, 'admin');
    const mint = await inTransaction();
    try {
      await insertKeyRow(mint as unknown as pg.Pool, {
        userId: colleague.userId,
        orgId: w.orgId,
        createdAt: clock.now(),
      });
      const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId, expires_in_days: 7 });
      expect(minted.status).toBe(201);
      const key = await expiryOf(minted.body.id);
      expect(key.expires_at?.getTime()).toBe(key.created_at.getTime() + 7 * DAY_MS);
    } finally {
      await mint.query('ROLLBACK');
      mint.release();
    }
  });
});
