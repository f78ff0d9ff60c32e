import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyPolicyRepository } from '../../src/api-keys/api-key-policy.repository.js';
import { KeyPolicyRepository } from '../../src/key-policies/key-policy.repository.js';
import { insertKeyRow, openRepositoryDatabase, type RepositoryDatabase } from '../support/factories.js';

/**
 * Every statement the org key policy drives, on real PostgreSQL without the app, with two data
 * sources on one database standing for two instances: the lifetime cut, the approval decision,
 * the stale warning and the stale revoke (each once, whichever instance gets there first), and
 * the policy table itself.
 */
const NOW = new Date('2031-06-01T12:00:00.000Z');
const DAY = 86_400_000;
const ago = (days: number) => new Date(NOW.getTime() - days * DAY);

describe('the key policy statements', () => {
  let r: RepositoryDatabase;
  let keys: ApiKeyPolicyRepository[];
  let policies: KeyPolicyRepository;

  beforeAll(async () => {
    r = await openRepositoryDatabase(2);
    keys = r.sources.map((s) => new ApiKeyPolicyRepository(s));
    policies = new KeyPolicyRepository(r.source);
  });
  afterAll(async () => r?.close());

  async function org() {
    const orgId = await r.seed.org();
    const user = await r.seed.user();
    await r.seed.member(orgId, user.id, 'member');
    return { orgId, userId: user.id };
  }
  const row = async (id: string) =>
    (await r.db.pool.query(`SELECT expires_at, revoked_at, approval FROM api_keys WHERE id = $1`, [id])).rows[0];
  const inTransaction = <T>(i: number, work: (m: import('typeorm').EntityManager) => Promise<T>) =>
    r.sources[i].transaction(work);

  it('saves a policy whole, reads it back, and lists the orgs with a stale threshold', async () => {
    const o = await org();
    expect(await policies.find(o.orgId)).toBeNull();
    const policy = {
      orgId: o.orgId,
      maxLifetimeDays: 30,
      requireExpiry: true,
      staleAfterDays: 90,
      allowedScopesByRole: { viewer: ['decisions:read' as const] },
      approvalRequiredFor: ['decisions:write' as const],
      updatedAt: NOW,
      updatedBy: o.userId,
    };
    await inTransaction(0, (m) => policies.save(policy, m));
    expect(await policies.find(o.orgId)).toEqual(policy);
    await inTransaction(0, (m) =>
      policies.save({ ...policy, staleAfterDays: null, allowedScopesByRole: null, approvalRequiredFor: null }, m),
    );
    expect(await policies.find(o.orgId)).toMatchObject({
      staleAfterDays: null,
      allowedScopesByRole: null,
      approvalRequiredFor: null,
    });
    expect((await policies.withStaleThreshold()).map((p) => p.orgId)).not.toContain(o.orgId);
    await expect(
      r.db.pool.query(`UPDATE org_key_policies SET max_lifetime_days = 367 WHERE org_id = $1`, [o.orgId]),
    ).rejects.toThrow(/check/);
  });

  it('cuts the org’s unrevoked keys that outlive the limit to creation + limit, and no others', async () => {
    const o = await org();
    const other = await org();
    const forever = await insertKeyRow(r.db.pool, { ...o, createdAt: ago(5) });
    const long = await insertKeyRow(r.db.pool, { ...o, createdAt: ago(5), expiresAt: ago(-100) });
    const within = await insertKeyRow(r.db.pool, { ...o, createdAt: ago(5), expiresAt: ago(-3) });
    const revoked = await insertKeyRow(r.db.pool, { ...o, createdAt: ago(5), revokedAt: ago(1) });
    const expired = await insertKeyRow(r.db.pool, { ...o, createdAt: ago(50), expiresAt: ago(1) });
    const elsewhere = await insertKeyRow(r.db.pool, { ...other, createdAt: ago(5) });
    const cut = await inTransaction(0, (m) => keys[0].capLifetime(o.orgId, 10, NOW, m));
    expect(cut.map((k) => k.id).sort()).toEqual([forever.id, long.id].sort());
    for (const k of [forever, long]) expect((await row(k.id)).expires_at).toEqual(ago(-5));
    expect((await row(within.id)).expires_at).toEqual(ago(-3));
    expect((await row(revoked.id)).expires_at).toBeNull();
    expect((await row(expired.id)).expires_at).toEqual(ago(1));
    expect((await row(elsewhere.id)).expires_at).toBeNull();
  });

  it('decides a pending key of the org once: approval clears the mark, denial revokes it; another org’s key is not found', async () => {
    const o = await org();
    const [a, d] = [await insertKeyRow(r.db.pool, o), await insertKeyRow(r.db.pool, o)];
    await r.db.pool.query(`UPDATE api_keys SET approval = 'pending' WHERE id = ANY($1)`, [[a.id, d.id]]);
    const stranger = await org();
    expect(await inTransaction(0, (m) => keys[0].decide(stranger.orgId, a.id, 'approve', NOW, m))).toBeNull();
    expect(await keys[0].approvalOf(stranger.orgId, a.id)).toBeNull();

    const [first, second] = await Promise.all(
      [0, 1].map((i) => inTransaction(i, (m) => keys[i].decide(o.orgId, a.id, 'approve', NOW, m))),
    );
    expect([first, second].filter(Boolean)).toHaveLength(1);
    expect(await row(a.id)).toEqual({ expires_at: null, revoked_at: null, approval: null });

    expect(await inTransaction(0, (m) => keys[0].decide(o.orgId, d.id, 'deny', NOW, m))).toMatchObject({
      id: d.id,
      revokedAt: NOW,
    });
    expect(await row(d.id)).toEqual({ expires_at: null, revoked_at: NOW, approval: 'denied' });
    expect(await inTransaction(0, (m) => keys[0].decide(o.orgId, d.id, 'approve', NOW, m))).toBeNull();
    expect(await keys[0].approvalOf(o.orgId, d.id)).toEqual({ approval: 'denied', revokedAt: NOW });
  });

  it('warns each idle key once per idle period, and revokes a stale key once, with two instances racing', async () => {
    const o = await org();
    const idle = await insertKeyRow(r.db.pool, { ...o, name: 'idle', createdAt: ago(40) });
    const fresh = await insertKeyRow(r.db.pool, { ...o, name: 'fresh', createdAt: ago(2) });
    const pending = await insertKeyRow(r.db.pool, { ...o, name: 'pending', createdAt: ago(40) });
    await r.db.pool.query(`UPDATE api_keys SET approval = 'pending' WHERE id = $1`, [pending.id]);

    const warn = (i: number) => inTransaction(i, (m) => keys[i].warnStale(o.orgId, ago(23), NOW, 10, m));
    const warned = (await Promise.all([warn(0), warn(1)])).flat();
    expect(warned.map((k) => k.id)).toEqual([idle.id]);
    expect(warned[0].idleSince).toEqual(ago(40));
    expect(await warn(0)).toEqual([]);
    // Used a day after its warning, then idle again past the warning threshold 24 days later: warned again, once.
    await r.db.pool.query(`UPDATE api_keys SET last_used_at = $2 WHERE id = $1`, [idle.id, ago(-1)]);
    const later = ago(-25);
    // (By then `fresh`, never used, is as idle: it is warned for the first time.)
    const warnLater = (i: number) => inTransaction(i, (m) => keys[i].warnStale(o.orgId, ago(-2), later, 10, m));
    expect(
      (await Promise.all([warnLater(0), warnLater(1)]))
        .flat()
        .map((k) => k.id)
        .sort(),
    ).toEqual([idle.id, fresh.id].sort());

    expect((await keys[0].staleKeyIds(o.orgId, ago(-2), later, 10)).sort()).toEqual([idle.id, fresh.id].sort());
    const revoke = (i: number) => inTransaction(i, (m) => keys[i].revokeStale(o.orgId, idle.id, ago(-2), later, m));
    const revoked = await Promise.all([revoke(0), revoke(1)]);
    expect(revoked.filter(Boolean)).toHaveLength(1);
    expect((await row(idle.id)).revoked_at).toEqual(later);
    expect((await row(fresh.id)).revoked_at).toBeNull();
    expect((await row(pending.id)).revoked_at).toBeNull();
    // A key used after it was picked is left alone.
    await r.db.pool.query(`UPDATE api_keys SET last_used_at = $2 WHERE id = $1`, [fresh.id, later]);
    expect(await inTransaction(0, (m) => keys[0].revokeStale(o.orgId, fresh.id, ago(-2), later, m))).toBeNull();
  });
});
