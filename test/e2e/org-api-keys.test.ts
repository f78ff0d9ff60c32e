import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../support/clock.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { expect400, mintOk, NOWHERE } from './api-keys.fixtures.js';

const DAY_MS = 86_400_000;

describe('org-admin oversight: GET /orgs/{org_id}/api-keys and DELETE /orgs/{org_id}/api-keys/{keyID}', () => {
  let t: TestApp;
  const clock = new TestClock('2031-06-01T09:00:00.000Z');

  beforeAll(async () => {
    t = await startTestApp({ clock });
  });
  afterAll(async () => t?.close());

  const list = (session: string, orgId: string, query = '') => t.api.get(`/orgs/${orgId}/api-keys${query}`, session);

  /** An org with an owner, an admin, a member and a viewer, each holding one key. */
  async function team() {
    const owner = await t.seed.world('owner');
    const admin = await t.seed.colleague(owner.orgId, 'admin');
    const member = await t.seed.colleague(owner.orgId, 'member');
    const viewer = await t.seed.colleague(owner.orgId, 'viewer');
    const keys: Record<string, Record<string, any>> = {};
    for (const [name, who] of Object.entries({ owner, admin, member, viewer })) {
      keys[name] = await mintOk(t, who.session, { org_id: owner.orgId, name });
      clock.advance(1000);
    }
    return { orgId: owner.orgId, owner, admin, member, viewer, keys };
  }

  describe('GET', () => {
    it("shows owners and admins every key of the org, whoever minted it, with the owner's id, e-mail and standing, never the key", async () => {
      const w = await team();
      for (const reader of [w.owner, w.admin]) {
        const res = await list(reader.session, w.orgId);
        expect(res.status).toBe(200);
        expect(res.body.keys.map((k: any) => k.name)).toEqual(['viewer', 'member', 'admin', 'owner']);
        const { key, ...memberRecord } = w.keys.member;
        expect(res.body.keys[1]).toEqual({
          ...memberRecord,
          user_id: w.member.userId,
          owner_email: w.member.email,
          owner_status: 'member',
          state: 'active',
        });
        for (const k of Object.values(w.keys)) expect(res.text).not.toContain(k.key);
      }
    });

    it('shows a removed member’s keys as theirs, with owner_status "removed" (and they no longer verify)', async () => {
      const w = await team();
      await t.seed.removeMember(w.orgId, w.member.userId);
      expect((await t.api.get('/me', w.keys.member.key)).status).toBe(401);
      const res = await list(w.owner.session, w.orgId, `?user_id=${w.member.userId}`);
      expect(res.body.keys).toHaveLength(1);
      expect(res.body.keys[0]).toMatchObject({
        id: w.keys.member.id,
        user_id: w.member.userId,
        owner_email: w.member.email,
        owner_status: 'removed',
      });
    });

    it('filters by state and by user_id, and paginates', async () => {
      const w = await team();
      const expiring = await mintOk(t, w.member.session, { org_id: w.orgId, name: 'expiring', expires_in_days: 1 });
      expect((await t.api.delete(`/api-keys/${w.keys.viewer.id}`, w.viewer.session)).status).toBe(204);
      clock.advance(2 * DAY_MS);
      const names = async (query: string) =>
        (await list(w.admin.session, w.orgId, query)).body.keys.map((k: any) => k.name);
      expect(await names('?state=revoked')).toEqual(['viewer']);
      expect(await names('?state=expired')).toEqual(['expiring']);
      expect(await names('?state=active')).toEqual(['member', 'admin', 'owner']);
      expect(await names(`?user_id=${w.member.userId}`)).toEqual(['expiring', 'member']);
      expect(await names(`?user_id=${w.member.userId}&state=active`)).toEqual(['member']);
      expect((await list(w.admin.session, w.orgId, '?state=expired')).body.keys[0]).toMatchObject({
        id: expiring.id,
        state: 'expired',
      });

      const first = await list(w.admin.session, w.orgId, '?limit=3');
      expect(first.body.keys.map((k: any) => k.name)).toEqual(['expiring', 'viewer', 'member']);
      const rest = await list(w.admin.session, w.orgId, `?limit=3&cursor=${first.body.next_cursor}`);
      expect(rest.body.keys.map((k: any) => k.name)).toEqual(['admin', 'owner']);
      expect(rest.body).not.toHaveProperty('next_cursor');
    });

    it.each([
      ['?state=dead', /state must be one of active, revoked, expired, pending, denied, disabled/],
      ['?user_id=bob', /user_id must be a UUID/],
      ['?limit=-1', /limit/],
      ['?cursor=%%%', /cursor/],
    ])('refuses %s (400 naming it)', async (query, message) => {
      const w = await t.seed.world('owner');
      expect400(await list(w.session, w.orgId, query), message);
    });

    it('refuses members and viewers (403), an API key (403), and answers 404 alike for a missing org and a foreign one', async () => {
      const w = await team();
      expect((await list(w.member.session, w.orgId)).status).toBe(403);
      expect((await list(w.viewer.session, w.orgId)).status).toBe(403);
      expect((await list(w.keys.owner.key, w.orgId)).status).toBe(403);
      const other = await t.seed.world('owner');
      const missing = await list(other.session, NOWHERE);
      const foreign = await list(other.session, w.orgId);
      expect(missing.status).toBe(404);
      expect(foreign.text).toBe(missing.text);
      expect400(await list(w.owner.session, 'acme'), /org_id must be a UUID/);
    });
  });

  describe('DELETE', () => {
    it("lets an admin revoke a member's key: 204, it stops verifying, and the audit log names the admin", async () => {
      const w = await team();
      const res = await t.api.request('DELETE', `/orgs/${w.orgId}/api-keys/${w.keys.member.id}`, {
        token: w.admin.session,
        headers: { 'x-request-id': 'admin-revoke-1' },
      });
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expect((await t.api.get('/me', w.keys.member.key)).status).toBe(401);
      expect((await t.api.get('/api-keys', w.member.session)).body.keys[0].revoked_at).toBeDefined();
      const events = (await t.api.get(`/orgs/${w.orgId}/audit-events?action=api_key.revoked_by_admin`, w.owner.session))
        .body.events;
      expect(events).toEqual([
        expect.objectContaining({
          actor: { type: 'user', id: w.admin.userId },
          credential: { type: 'session' },
          target: { type: 'api_key', id: w.keys.member.id },
          request_id: res.headers.get('x-request-id'),
          details: { name: 'member', owner_id: w.member.userId, client_request_id: 'admin-revoke-1' },
        }),
      ]);
      // Again: 204, nothing changes, nothing more recorded.
      expect((await t.api.delete(`/orgs/${w.orgId}/api-keys/${w.keys.member.id}`, w.owner.session)).status).toBe(204);
      expect((await t.seed.auditEvents(w.orgId)).filter((e) => e.action === 'api_key.revoked_by_admin')).toHaveLength(
        1,
      );
    });

    it('an admin of org A can neither see nor revoke a key of org B (404, like a missing key)', async () => {
      const a = await team();
      const b = await team();
      expect((await list(a.admin.session, b.orgId)).status).toBe(404);
      const viaOwnOrg = await t.api.delete(`/orgs/${a.orgId}/api-keys/${b.keys.member.id}`, a.admin.session);
      const missing = await t.api.delete(`/orgs/${a.orgId}/api-keys/${NOWHERE}`, a.admin.session);
      expect(viaOwnOrg.status).toBe(404);
      expect(viaOwnOrg.text).toBe(missing.text);
      expect((await t.api.delete(`/orgs/${b.orgId}/api-keys/${b.keys.member.id}`, a.admin.session)).status).toBe(404);
      expect((await t.api.get('/me', b.keys.member.key)).status).toBe(200);
      expect((await list(a.admin.session, a.orgId)).body.keys.map((k: any) => k.id)).not.toContain(b.keys.member.id);
    });

    it('refuses members and viewers (403) and API keys (403), revoking nothing', async () => {
      const w = await team();
      for (const token of [w.member.session, w.viewer.session, w.keys.owner.key]) {
        expect((await t.api.delete(`/orgs/${w.orgId}/api-keys/${w.keys.admin.id}`, token)).status).toBe(403);
      }
      expect((await t.api.get('/me', w.keys.admin.key)).status).toBe(200);
    });

    it('refuses ids that are not UUIDs (400)', async () => {
      const w = await t.seed.world('owner');
      expect400(await t.api.delete(`/orgs/${w.orgId}/api-keys/nope`, w.session), /keyID must be a UUID/);
      expect400(await t.api.delete(`/orgs/acme/api-keys/${NOWHERE}`, w.session), /org_id must be a UUID/);
    });
  });
});
