import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PeriodicJobs } from '../../src/common/periodic-jobs.js';
import { TestClock } from '../support/clock.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { expect400, listKeys, mintOk, NOWHERE, READ, WRITE } from './api-keys.fixtures.js';

const DAY_MS = 86_400_000;

/**
 * The org key policy on real PostgreSQL, with two instances on one database (each answering
 * from its verification cache): GET/PUT /orgs/{org_id}/key-policy, the lifetime and expiry rules,
 * scopes by role, approval of members' keys, and the stale-key sweep.
 */
describe('org key policy', () => {
  let a: TestApp;
  let b: TestApp;
  const clock = new TestClock('2032-03-01T09:00:00.000Z');

  beforeAll(async () => {
    // No relay drains the outbox here, so the events each change wrote stay there to be read.
    const env = { EVENTS_WORKER: 'false' };
    a = await startTestApp({ clock, env });
    b = await startTestApp({ clock, env, db: a.db });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const put = (t: TestApp, session: string, orgId: string, body: unknown) =>
    t.api.request('PUT', `/orgs/${orgId}/key-policy`, { token: session, body });
  const getPolicy = (t: TestApp, session: string, orgId: string) => t.api.get(`/orgs/${orgId}/key-policy`, session);
  const me = (t: TestApp, key: string) => t.api.get('/me', key);
  const events = async (orgId: string, type: string) =>
    (
      await a.db.pool.query(`SELECT data FROM event_outbox WHERE org_id = $1 AND type = $2 ORDER BY created_at`, [
        orgId,
        type,
      ])
    ).rows.map((r) => r.data);
  const audits = async (orgId: string, action: string) =>
    (await a.seed.auditEvents(orgId)).filter((e) => e.action === action);

  async function team() {
    const owner = await a.seed.world('owner');
    const admin = await a.seed.colleague(owner.orgId, 'admin');
    const member = await a.seed.colleague(owner.orgId, 'member');
    const viewer = await a.seed.colleague(owner.orgId, 'viewer');
    return { orgId: owner.orgId, owner, admin, member, viewer };
  }

  describe('GET and PUT', () => {
    it('shows owners and admins the policy (no rule while none is set), lets only owners set it, and refuses API keys', async () => {
      const w = await team();
      const none = {
        max_lifetime_days: null,
        require_expiry: false,
        stale_after_days: null,
        allowed_scopes_by_role: null,
        approval_required_for: null,
      };
      expect((await getPolicy(a, w.admin.session, w.orgId)).body).toEqual(none);
      expect((await getPolicy(a, w.member.session, w.orgId)).status).toBe(403);
      expect((await put(a, w.admin.session, w.orgId, { require_expiry: true })).status).toBe(403);
      const key = await mintOk(a, w.owner.session, { org_id: w.orgId });
      expect((await getPolicy(a, key.key, w.orgId)).status).toBe(403);
      expect((await getPolicy(a, w.owner.session, NOWHERE)).status).toBe(404);

      const policy = {
        max_lifetime_days: 90,
        require_expiry: true,
        stale_after_days: 365,
        allowed_scopes_by_role: { viewer: [READ] },
        approval_required_for: [WRITE],
      };
      const res = await put(a, w.owner.session, w.orgId, policy);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject(policy);
      // Set on one instance, read on the other.
      expect((await getPolicy(b, w.admin.session, w.orgId)).body).toMatchObject({
        ...policy,
        updated_at: clock.now().toISOString(),
      });
      expect(await audits(w.orgId, 'org.key_policy_updated')).toHaveLength(1);
    });

    it.each([
      [{ max_lifetime_days: 0 }, /max_lifetime_days must be null or an integer from 1 to 366/],
      [{ max_lifetime_days: 367 }, /max_lifetime_days/],
      [{ max_lifetime_days: '30' }, /max_lifetime_days/],
      [{ stale_after_days: 29 }, /stale_after_days must be null or an integer from 30 to 730/],
      [{ stale_after_days: 731 }, /stale_after_days/],
      [{ require_expiry: 'yes' }, /require_expiry must be a boolean/],
      [{ approval_required_for: ['admin:all'] }, /approval_required_for may only contain/],
      [{ allowed_scopes_by_role: { superuser: [READ] } }, /allowed_scopes_by_role.superuser is not an accepted field/],
      [
        { allowed_scopes_by_role: { viewer: [WRITE] } },
        /allowed_scopes_by_role.viewer may not contain decisions:write/,
      ],
      [{ allowed_scopes_by_role: [] }, /allowed_scopes_by_role/],
      [{ max_days: 30 }, /max_days is not an accepted field/],
    ])('refuses %j with a 400 naming the field, writing nothing', async (body, message) => {
      const w = await team();
      expect((await put(a, w.owner.session, w.orgId, { stale_after_days: 100 })).status).toBe(200);
      expect400(await put(a, w.owner.session, w.orgId, { max_lifetime_days: 30, ...body }), message);
      expect((await getPolicy(a, w.owner.session, w.orgId)).body).toMatchObject({
        stale_after_days: 100,
        max_lifetime_days: null,
      });
    });
  });

  describe('lifetime and expiry', () => {
    it('refuses a mint with no expiry or a longer one (400 naming the policy), and allows one within it', async () => {
      const w = await team();
      await put(a, w.owner.session, w.orgId, { max_lifetime_days: 30 });
      expect400(
        await a.api.post('/api-keys', w.member.session, { org_id: w.orgId }),
        /max_lifetime_days/,
        /at most 30 days/,
      );
      expect400(
        await a.api.post('/api-keys', w.member.session, { org_id: w.orgId, expires_in_days: 31 }),
        /max_lifetime_days/,
      );
      const ok = await mintOk(a, w.member.session, { org_id: w.orgId, expires_in_days: 30 });
      expect(ok).not.toHaveProperty('status');
    });

    it('with require_expiry, refuses a mint without an expiry and the rotation of a key that has none', async () => {
      const w = await team();
      const forever = await mintOk(a, w.member.session, { org_id: w.orgId });
      await put(a, w.owner.session, w.orgId, { require_expiry: true });
      expect400(await a.api.post('/api-keys', w.member.session, { org_id: w.orgId }), /require_expiry/);
      await mintOk(a, w.member.session, { org_id: w.orgId, expires_in_days: 366 });
      expect400(await a.api.post(`/api-keys/${forever.id}/rotate`, w.member.session, {}), /key policy/);
    });

    it('stops existing keys at the limit from their creation on every instance before the PUT answers, announcing the ones still running', async () => {
      const w = await team();
      const old = await mintOk(a, w.member.session, { org_id: w.orgId, name: 'old' });
      clock.advance(20 * DAY_MS);
      const young = await mintOk(a, w.member.session, { org_id: w.orgId, name: 'young', expires_in_days: 200 });
      const short = await mintOk(a, w.member.session, { org_id: w.orgId, name: 'short', expires_in_days: 5 });
      // Both instances hold the keys in their caches.
      for (const t of [a, b]) for (const k of [old, young, short]) expect((await me(t, k.key)).status).toBe(200);

      const res = await put(a, w.owner.session, w.orgId, { max_lifetime_days: 10 });
      expect(res.status, res.text).toBe(200);
      // The 20-day-old key is past the limit at once, everywhere.
      for (const t of [a, b]) expect((await me(t, old.key)).status).toBe(401);
      for (const t of [a, b]) expect((await me(t, young.key)).status).toBe(200);
      const listed = Object.fromEntries((await listKeys(a, w.member.session)).map((k) => [k.name, k]));
      expect(listed.young.expires_at).toBe(new Date(Date.parse(young.created_at) + 10 * DAY_MS).toISOString());
      expect(listed.short.expires_at).toBe(short.expires_at);
      expect((await events(w.orgId, 'api_key.expiring')).map((e) => [e.name, e.reason])).toEqual([
        ['young', 'key_policy'],
      ]);

      clock.advance(10 * DAY_MS);
      for (const t of [a, b]) expect((await me(t, young.key)).status).toBe(401);
    });
  });

  it('lets a role grant only the scopes the policy allows it (403 naming the policy)', async () => {
    const w = await team();
    await put(a, w.owner.session, w.orgId, { allowed_scopes_by_role: { member: [READ] } });
    const res = await a.api.post('/api-keys', w.member.session, { org_id: w.orgId, scopes: [READ, WRITE] });
    expect(res.status).toBe(403);
    expect(res.body.message).toMatch(/allowed_scopes_by_role/);
    await mintOk(a, w.member.session, { org_id: w.orgId, scopes: [READ] });
    await mintOk(a, w.admin.session, { org_id: w.orgId, scopes: [READ, WRITE] });
  });

  describe('approval', () => {
    it('holds a member’s key asking for a listed scope as pending until an admin approves it; never after a denial', async () => {
      const w = await team();
      await put(a, w.owner.session, w.orgId, { approval_required_for: [WRITE] });
      const pending = await mintOk(a, w.member.session, { org_id: w.orgId, name: 'p', scopes: [WRITE] });
      const refused = await mintOk(a, w.member.session, { org_id: w.orgId, name: 'r', scopes: [READ, WRITE] });
      expect(pending).toMatchObject({ status: 'pending', key: expect.any(String) });
      expect(await mintOk(a, w.member.session, { org_id: w.orgId, scopes: [READ] })).not.toHaveProperty('status');
      expect(await mintOk(a, w.owner.session, { org_id: w.orgId, scopes: [WRITE] })).not.toHaveProperty('status');
      for (const t of [a, b]) expect((await me(t, pending.key)).status).toBe(401);
      expect((await listKeys(a, w.member.session)).find((k) => k.id === pending.id)).toMatchObject({
        status: 'pending',
      });
      const org = await a.api.get(`/orgs/${w.orgId}/api-keys?state=pending`, w.admin.session);
      expect(org.body.keys.map((k: any) => k.name).sort()).toEqual(['p', 'r']);

      const decide = (t: TestApp, session: string, id: string, what: 'approve' | 'deny', orgId = w.orgId) =>
        t.api.post(`/orgs/${orgId}/api-keys/${id}/${what}`, session, undefined);
      expect((await decide(a, w.member.session, pending.id, 'approve')).status).toBe(403);
      const stranger = await a.seed.world('owner');
      expect((await decide(a, stranger.session, pending.id, 'approve', stranger.orgId)).status).toBe(404);
      expect((await decide(a, w.admin.session, NOWHERE, 'approve')).status).toBe(404);

      expect((await decide(a, w.admin.session, pending.id, 'approve')).status).toBe(204);
      for (const t of [a, b]) expect((await me(t, pending.key)).status).toBe(200);
      expect((await listKeys(a, w.member.session)).find((k) => k.id === pending.id)).not.toHaveProperty('status');

      expect((await decide(b, w.owner.session, refused.id, 'deny')).status).toBe(204);
      expect((await decide(a, w.owner.session, refused.id, 'approve')).status).toBe(409);
      for (const t of [a, b]) expect((await me(t, refused.key)).status).toBe(401);
      expect((await listKeys(a, w.member.session)).find((k) => k.id === refused.id)).toMatchObject({
        status: 'denied',
        revoked_at: expect.any(String),
      });

      expect((await events(w.orgId, 'api_key.pending')).map((e) => e.name).sort()).toEqual(['p', 'r']);
      expect((await events(w.orgId, 'api_key.approved')).map((e) => [e.name, e.decided_by])).toEqual([
        ['p', w.admin.userId],
      ]);
      expect((await events(w.orgId, 'api_key.denied')).map((e) => e.name)).toEqual(['r']);
      expect(await audits(w.orgId, 'api_key.approved')).toHaveLength(1);
      expect(await audits(w.orgId, 'api_key.denied')).toHaveLength(1);
    });
  });

  describe('stale keys', () => {
    it('revokes exactly the keys idle past the threshold, once, with two instances racing; warns 7 days before', async () => {
      const w = await team();
      const idle = await mintOk(a, w.member.session, { org_id: w.orgId, name: 'idle' });
      const used = await mintOk(a, w.member.session, { org_id: w.orgId, name: 'used' });
      clock.advance(15 * DAY_MS);
      const younger = await mintOk(a, w.member.session, { org_id: w.orgId, name: 'younger' });
      clock.advance(20 * DAY_MS);
      const fresh = await mintOk(a, w.member.session, { org_id: w.orgId, name: 'fresh' });
      expect((await me(a, used.key)).status).toBe(200);
      await expect
        .poll(async () => (await listKeys(a, w.member.session)).find((k) => k.id === used.id)?.last_used_at)
        .toBeDefined();
      clock.advance(DAY_MS);
      // Now: `idle` unused for 36 days, `used` used a day ago, `younger` unused for 21 days (warned from 23), `fresh` for 1.
      await put(a, w.owner.session, w.orgId, { stale_after_days: 30 });
      const sweep = () =>
        Promise.all([a, b].map((t) => t.app.get(PeriodicJobs, { strict: false }).runNow('stale-keys')));
      await sweep();
      expect((await me(b, idle.key)).status).toBe(401);
      // Read through the list, not by using them (a use would make them fresh).
      const revokedNames = async () =>
        (await listKeys(a, w.member.session))
          .filter((k) => k.revoked_at)
          .map((k) => k.name)
          .sort();
      expect(await revokedNames()).toEqual(['idle']);
      expect((await events(w.orgId, 'api_key.revoked')).map((e) => [e.name, e.reason])).toEqual([['idle', 'stale']]);
      const revokedAudit = await audits(w.orgId, 'api_key.revoked_as_stale');
      expect(revokedAudit).toHaveLength(1);
      expect(revokedAudit[0]).toMatchObject({ actor_type: 'system', target_id: idle.id });
      expect(await events(w.orgId, 'api_key.stale_warning')).toEqual([]);

      clock.advance(3 * DAY_MS); // younger: idle 24 days, in the warning week
      await sweep();
      await sweep();
      expect((await events(w.orgId, 'api_key.stale_warning')).map((e) => e.name)).toEqual(['younger']);
      expect(await revokedNames()).toEqual(['idle']);

      clock.advance(7 * DAY_MS);
      await sweep();
      expect((await me(a, younger.key)).status).toBe(401);
      expect(await revokedNames()).toEqual(['idle', 'younger']);
      expect((await events(w.orgId, 'api_key.revoked')).map((e) => e.name).sort()).toEqual(['idle', 'younger']);
      expect(await audits(w.orgId, 'api_key.revoked_as_stale')).toHaveLength(2);
    });
  });
});
