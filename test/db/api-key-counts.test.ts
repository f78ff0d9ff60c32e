import { randomBytes, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiKeyWriteRepository, type MintWrite } from '../../src/api-keys/api-key-write.repository.js';
import { generateApiKey } from '../../src/auth/api-key-format.js';
import { runMigrationsLocked } from '../../src/database/migrate.js';
import { MIGRATIONS } from '../../src/core/schema.js';
import { TestClock } from '../support/clock.js';
import { databaseUrl, useEmptyDatabase } from '../support/database.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * The active-key cap's counter (api_key_counts, kept by a trigger on api_keys) on real
 * PostgreSQL: exact under concurrency across two instances, right after every way a key stops
 * or starts counting, and never refusing a mint because of expired keys.
 */
const CAP = 5;

describe('the active-key counter', () => {
  const clock = new TestClock('2031-05-01T10:00:00Z');
  let t: TestApp;
  let replica: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ clock, env: { MAX_ACTIVE_KEYS_PER_USER_ORG: String(CAP) } });
    replica = await startTestApp({ clock, db: t.db, env: { MAX_ACTIVE_KEYS_PER_USER_ORG: String(CAP) } });
  });
  afterAll(async () => {
    await replica?.close();
    await t?.close();
  });

  /** What the counter says and what the keys say, for one (user, org). */
  async function tally(
    userId: string,
    orgId: string,
  ): Promise<{ counted: number | null; unrevoked: number; active: number }> {
    const { rows } = await t.db.pool.query(
      `SELECT (SELECT unrevoked FROM api_key_counts WHERE user_id = $1 AND org_id = $2) AS counted,
              (SELECT count(*)::int FROM api_keys WHERE user_id = $1 AND org_id = $2 AND revoked_at IS NULL) AS unrevoked,
              (SELECT count(*)::int FROM api_keys WHERE user_id = $1 AND org_id = $2 AND revoked_at IS NULL
                                                     AND (expires_at IS NULL OR expires_at > $3)) AS active`,
      [userId, orgId, clock.now()],
    );
    return rows[0];
  }

  function write(userId: string, orgId: string, extra: Partial<MintWrite> = {}): MintWrite {
    const g = generateApiKey();
    return {
      key: {
        id: randomUUID(),
        userId,
        orgId,
        name: 'direct',
        lookup: g.lookup,
        last4: g.last4,
        keyHash: randomBytes(32),
        scopes: ['decisions:read'],
        createdAt: clock.now(),
        expiresAt: null,
      },
      audit: null,
      event: null,
      ...extra,
    };
  }

  const mint = (app: TestApp, w: { session: string; orgId: string }, body: Record<string, unknown> = {}) =>
    app.api.post('/api-keys', w.session, { org_id: w.orgId, ...body });

  it('lets concurrent mints on two instances (two pools) take exactly the free places, from no row and from a counted row', async () => {
    const repos = [t, replica].map((a) => a.app.get(ApiKeyWriteRepository, { strict: false }));
    const fresh = await t.seed.world('member');
    // No counter row yet: every mint takes the exact path at once, on both instances.
    const first = await Promise.all(
      Array.from({ length: 30 }, (_, i) => repos[i % 2].mintWithinCap(write(fresh.userId, fresh.orgId), CAP)),
    );
    expect(first.filter(Boolean)).toHaveLength(CAP);
    expect(await tally(fresh.userId, fresh.orgId)).toEqual({ counted: CAP, unrevoked: CAP, active: CAP });

    // From a counted row (the one-statement path), several pairs at once: each gets exactly its free places.
    const pairs = await Promise.all(Array.from({ length: 4 }, () => t.seed.world('member')));
    for (const p of pairs)
      for (let i = 0; i < 3; i++) expect(await repos[0].mintWithinCap(write(p.userId, p.orgId), CAP)).not.toBeNull();
    const second = await Promise.all(
      Array.from({ length: 120 }, (_, i) =>
        repos[i % 2].mintWithinCap(write(pairs[i % 4].userId, pairs[i % 4].orgId), CAP).then((k) => (k ? i % 4 : -1)),
      ),
    );
    for (const [n, p] of pairs.entries()) {
      expect(second.filter((x) => x === n)).toHaveLength(CAP - 3);
      expect(await tally(p.userId, p.orgId)).toEqual({ counted: CAP, unrevoked: CAP, active: CAP });
    }
  });

  it("writes one instance's concurrent mints in a few statements, not one each, and sends a full pair's refusals to no second look", async () => {
    const repo = t.app.get(ApiKeyWriteRepository, { strict: false });
    const w = await t.seed.world('member');
    expect(await repo.mintWithinCap(write(w.userId, w.orgId), 100)).not.toBeNull();
    const batches = vi.spyOn(repo as unknown as { mintBatch: (items: unknown[]) => Promise<unknown> }, 'mintBatch');
    const exact = vi.spyOn(repo as unknown as { mintChecked: () => Promise<unknown> }, 'mintChecked');
    try {
      const minted = await Promise.all(
        Array.from({ length: 20 }, () => repo.mintWithinCap(write(w.userId, w.orgId), 100)),
      );
      expect(minted.every(Boolean)).toBe(true);
      expect(batches.mock.calls.length).toBeLessThanOrEqual(3);
      expect(batches.mock.calls.flatMap((c) => c[0])).toHaveLength(20);
      // 21 active keys, cap 21: refused at once, without the exact path.
      expect(
        await Promise.all(Array.from({ length: 5 }, () => repo.mintWithinCap(write(w.userId, w.orgId), 21))),
      ).toEqual([null, null, null, null, null]);
      expect(exact).not.toHaveBeenCalled();
    } finally {
      batches.mockRestore();
      exact.mockRestore();
    }
    expect(await tally(w.userId, w.orgId)).toEqual({ counted: 21, unrevoked: 21, active: 21 });
  });

  it('frees a place when a key is revoked, and counts per org', async () => {
    const w = await t.seed.world('member');
    const ids: string[] = [];
    for (let i = 0; i < CAP; i++) ids.push((await mint(t, w)).body.id);
    expect((await mint(replica, w)).status).toBe(409);
    expect((await t.api.delete(`/api-keys/${ids[0]}`, w.session)).status).toBe(204);
    // Revoking it again changes nothing.
    expect((await t.api.delete(`/api-keys/${ids[0]}`, w.session)).status).toBe(204);
    expect(await tally(w.userId, w.orgId)).toEqual({ counted: CAP - 1, unrevoked: CAP - 1, active: CAP - 1 });
    expect((await mint(replica, w)).status).toBe(201);
    expect((await mint(t, w)).status).toBe(409);

    const other = await t.seed.org();
    await t.seed.member(other, w.userId, 'member');
    await t.seed.workspace(other, w.userId);
    expect((await mint(t, { session: w.session, orgId: other })).status).toBe(201);
    expect(await tally(w.userId, other)).toEqual({ counted: 1, unrevoked: 1, active: 1 });
  });

  it('frees a place when a key expires: the exact count decides and the counter keeps counting the expired key until it is revoked', async () => {
    const w = await t.seed.world('member');
    const expiring = (await mint(t, w, { expires_in_days: 1 })).body.id as string;
    for (let i = 1; i < CAP; i++) expect((await mint(t, w)).status).toBe(201);
    expect((await mint(t, w)).status).toBe(409);

    clock.advance(2 * 86_400_000);
    expect((await mint(replica, w)).status).toBe(201);
    expect(await tally(w.userId, w.orgId)).toEqual({ counted: CAP + 1, unrevoked: CAP + 1, active: CAP });
    expect((await mint(t, w)).status).toBe(409);

    // Revoking the expired key moves the counter too (it was unrevoked), not the active count.
    expect((await t.api.delete(`/api-keys/${expiring}`, w.session)).status).toBe(204);
    expect(await tally(w.userId, w.orgId)).toEqual({ counted: CAP, unrevoked: CAP, active: CAP });
    expect((await mint(t, w)).status).toBe(409);
  });

  it('stays right through rotation, an admin revoke, a leaked-key revoke and a removed member', async () => {
    const w = await t.seed.world('owner');
    const keys: Array<{ id: string; key: string }> = [];
    for (let i = 0; i < 4; i++) keys.push((await mint(t, w)).body);
    const check = async (n: number) =>
      expect(await tally(w.userId, w.orgId)).toEqual({ counted: n, unrevoked: n, active: n });

    expect((await t.api.post(`/api-keys/${keys[0].id}/rotate`, w.session, {})).status).toBe(201);
    await check(4);

    const admin = await t.seed.colleague(w.orgId, 'admin');
    expect((await t.api.delete(`/orgs/${w.orgId}/api-keys/${keys[1].id}`, admin.session)).status).toBe(204);
    await check(3);

    expect((await t.api.post('/credentials/revoke', undefined, { credentials: [keys[2].key] })).status).toBe(202);
    // The reported key is revoked right after the answer.
    await expect.poll(() => tally(w.userId, w.orgId)).toEqual({ counted: 2, unrevoked: 2, active: 2 });

    // Removing the member revokes nothing: their keys stop verifying but still count if they come back.
    await t.seed.removeMember(w.orgId, w.userId);
    await check(2);
  });

  it("counts keys that a host's own SQL inserts, revokes, restores and deletes", async () => {
    const w = await t.seed.world('member');
    const check = async (n: number) =>
      expect(await tally(w.userId, w.orgId)).toEqual({ counted: n, unrevoked: n, active: n });
    await t.db.pool.query(
      `INSERT INTO api_keys (user_id, org_id, lookup, last4, key_hash, scopes)
       SELECT $1, $2, 'sql' || md5(random()::text || i), 'abcd', '\\x00', ARRAY['decisions:read'] FROM generate_series(1, 3) i`,
      [w.userId, w.orgId],
    );
    await check(3);
    await t.db.pool.query(
      `INSERT INTO api_keys (user_id, org_id, lookup, last4, key_hash, scopes, revoked_at)
                           VALUES ($1, $2, 'sqlrevoked' || md5(random()::text), 'abcd', '\\x00', ARRAY['decisions:read'], now())`,
      [w.userId, w.orgId],
    );
    await check(3);
    await t.db.pool.query(
      `UPDATE api_keys SET revoked_at = now() WHERE user_id = $1 AND org_id = $2 AND revoked_at IS NULL`,
      [w.userId, w.orgId],
    );
    await check(0);
    await t.db.pool.query(`UPDATE api_keys SET revoked_at = NULL WHERE user_id = $1 AND org_id = $2`, [
      w.userId,
      w.orgId,
    ]);
    await check(4);
    // A key moved to another org leaves this count for that one.
    const other = await t.seed.org();
    await t.db.pool.query(
      `UPDATE api_keys SET org_id = $3 WHERE id = (SELECT id FROM api_keys WHERE user_id = $1 AND org_id = $2 LIMIT 1)`,
      [w.userId, w.orgId, other],
    );
    await check(3);
    expect(await tally(w.userId, other)).toEqual({ counted: 1, unrevoked: 1, active: 1 });
    await t.db.pool.query(`DELETE FROM api_keys WHERE user_id = $1 AND org_id = $2`, [w.userId, w.orgId]);
    await check(0);
    // last_used_at, written behind every verification, leaves the counter alone.
    expect((await mint(t, w)).status).toBe(201);
    await t.db.pool.query(`UPDATE api_keys SET last_used_at = now() WHERE user_id = $1`, [w.userId]);
    await check(1);
  });

  it('mends a counter that is wrong or missing at the next mint it would refuse', async () => {
    const w = await t.seed.world('member');
    expect((await mint(t, w)).status).toBe(201);
    await t.db.pool.query(`UPDATE api_key_counts SET unrevoked = 1000 WHERE user_id = $1 AND org_id = $2`, [
      w.userId,
      w.orgId,
    ]);
    expect((await mint(t, w)).status).toBe(201);
    expect(await tally(w.userId, w.orgId)).toEqual({ counted: 2, unrevoked: 2, active: 2 });
    await t.db.pool.query(`DELETE FROM api_key_counts WHERE user_id = $1 AND org_id = $2`, [w.userId, w.orgId]);
    expect((await mint(t, w)).status).toBe(201);
    expect(await tally(w.userId, w.orgId)).toEqual({ counted: 3, unrevoked: 3, active: 3 });
  });

  it('writes neither the key, its events nor a count when any part of the mint fails', async () => {
    const w = await t.seed.world('member');
    const repo = t.app.get(ApiKeyWriteRepository, { strict: false });
    expect(await repo.mintWithinCap(write(w.userId, w.orgId), CAP)).not.toBeNull();
    const before = await tally(w.userId, w.orgId);
    const events = async () =>
      (
        await t.db.pool.query(
          `SELECT (SELECT count(*)::int FROM audit_events WHERE org_id = $1) AS audit,
                                     (SELECT count(*)::int FROM event_outbox WHERE org_id = $1) AS outbox`,
          [w.orgId],
        )
      ).rows[0];
    const eventsBefore = await events();
    const bad = write(w.userId, w.orgId);
    bad.audit = {
      createdAt: clock.now(),
      orgId: w.orgId,
      action: 'api_key.minted',
      actorType: 'nobody',
      actorId: null,
      actorSource: null,
      credentialType: null,
      credentialId: null,
      targetType: 'api_key',
      targetId: bad.key.id,
      clientAddress: null,
      userAgent: null,
      requestId: null,
      details: {},
    };
    bad.event = { orgId: w.orgId, type: 'api_key.created', data: {}, at: clock.now() };
    // actor_type 'nobody' breaks the audit table's check: the key and the outbox event go with it.
    await expect(repo.mintWithinCap(bad, CAP)).rejects.toMatchObject({ code: '23514' });
    expect(await tally(w.userId, w.orgId)).toEqual(before);
    expect(await events()).toEqual(eventsBefore);
    expect((await t.db.pool.query(`SELECT 1 FROM api_keys WHERE id = $1`, [bad.key.id])).rowCount).toBe(0);

    // A good one writes all three.
    const good = write(w.userId, w.orgId, { event: bad.event });
    good.audit = { ...bad.audit!, actorType: 'system', targetId: good.key.id };
    expect(await repo.mintWithinCap(good, CAP)).toMatchObject({ id: good.key.id, revokedAt: null });
    expect(await events()).toEqual({ audit: eventsBefore.audit + 1, outbox: eventsBefore.outbox + 1 });
  });
});

describe('the counter migration', () => {
  const { name } = useEmptyDatabase('counts');
  const source = (migrations: typeof MIGRATIONS) =>
    new DataSource({ type: 'postgres', url: databaseUrl(name), migrations, installExtensions: false, poolSize: 2 });

  it('counts the unrevoked keys that exist before it, per user and org', async () => {
    const counted = MIGRATIONS.findIndex((m) => m.name === 'ApiKeyCounts1764800000000');
    expect(counted).toBeGreaterThan(0);
    const before = await source(MIGRATIONS.slice(0, counted)).initialize();
    await runMigrationsLocked(before);
    const [u1, u2, o1, o2] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    await before.query(
      `INSERT INTO api_keys (user_id, org_id, lookup, last4, key_hash, scopes, revoked_at, expires_at)
       SELECT p.u, p.o, 'm' || md5(random()::text || i || p.u), 'abcd', '\\x00', ARRAY['decisions:read'], p.revoked, p.expires
         FROM (VALUES ($1::uuid, $3::uuid, NULL::timestamptz, NULL::timestamptz, 3),
                      ($1::uuid, $3::uuid, now(), NULL, 2),
                      ($1::uuid, $4::uuid, NULL, now() - interval '1 day', 2),
                      ($2::uuid, $3::uuid, now(), NULL, 1)) AS p(u, o, revoked, expires, n),
              LATERAL generate_series(1, p.n) i`,
      [u1, u2, o1, o2],
    );
    await before.destroy();

    const after = await source(MIGRATIONS.slice(0, counted + 1)).initialize();
    expect(await runMigrationsLocked(after)).toEqual(['ApiKeyCounts1764800000000']);
    const rows: Array<{ user_id: string; org_id: string; unrevoked: number }> = await after.query(
      `SELECT user_id, org_id, unrevoked FROM api_key_counts`,
    );
    expect(rows).toHaveLength(2);
    expect(rows).toEqual(
      expect.arrayContaining([
        { user_id: u1, org_id: o1, unrevoked: 3 },
        // Expired keys are unrevoked: counted (the mint's exact path looks past them).
        { user_id: u1, org_id: o2, unrevoked: 2 },
      ]),
    );
    await after.undoLastMigration();
    const tables: Array<{ n: number }> = await after.query(
      `SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'api_key_counts'`,
    );
    expect(tables[0].n).toBe(0);
    await after.destroy();
  });
});
