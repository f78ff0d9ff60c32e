import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { expect400, mintOk, NOWHERE } from './api-keys.fixtures.js';

describe('GET /orgs and GET /orgs/{org_id}/members', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  describe('GET /orgs', () => {
    it("lists the session user's orgs with id, name, plan and role, newest membership first", async () => {
      const w = await t.seed.world('owner', 'pro');
      await t.db.pool.query(`UPDATE orgs SET name = 'Acme' WHERE id = $1`, [w.orgId]);
      const second = await t.seed.org('free', 'Globex');
      await t.seed.member(second, w.userId, 'viewer', new Date(Date.now() + 60_000));
      await t.seed.org('free', 'Not mine');
      const res = await t.api.get('/orgs', w.session);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        orgs: [
          { id: second, name: 'Globex', plan: 'free', role: 'viewer' },
          { id: w.orgId, name: 'Acme', plan: 'pro', role: 'owner' },
        ],
      });
    });

    it('paginates with limit and cursor', async () => {
      const u = await t.seed.user();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const org = await t.seed.org('free', `o${i}`);
        await t.seed.member(org, u.id, 'member', new Date(Date.UTC(2031, 0, 1, 0, i)));
        ids.unshift(org);
      }
      const session = t.seed.session(u.id, u.email);
      const seen: string[] = [];
      let cursor = '';
      for (let pages = 0; pages < 5; pages++) {
        const res = await t.api.get(`/orgs?limit=2${cursor ? `&cursor=${cursor}` : ''}`, session);
        expect(res.status).toBe(200);
        seen.push(...res.body.orgs.map((o: any) => o.id));
        if (!res.body.next_cursor) break;
        cursor = res.body.next_cursor;
      }
      expect(seen).toEqual(ids);
    });

    it('answers an empty list for a user in no org', async () => {
      const u = await t.seed.user();
      expect((await t.api.get('/orgs', t.seed.session(u.id, u.email))).body).toEqual({ orgs: [] });
    });

    it('refuses a bad limit or cursor (400), an API key (403) and no credential (401)', async () => {
      const w = await t.seed.world('owner');
      expect400(await t.api.get('/orgs?limit=1000', w.session), /limit must be between 1 and 100/);
      expect400(await t.api.get('/orgs?cursor=xyz', w.session), /cursor/);
      const key = await mintOk(t, w.session, { org_id: w.orgId });
      expect((await t.api.get('/orgs', key.key)).status).toBe(403);
      expect((await t.api.get('/orgs')).status).toBe(401);
    });
  });

  describe('GET /orgs/{org_id}/members', () => {
    it('lists members with e-mail and role to owners and admins, newest first, paginated', async () => {
      const w = await t.seed.world('owner');
      const admin = await t.seed.colleague(w.orgId, 'admin', new Date(Date.now() + 60_000));
      const viewer = await t.seed.colleague(w.orgId, 'viewer', new Date(Date.now() + 120_000));
      for (const reader of [w.session, admin.session]) {
        const all = await t.api.get(`/orgs/${w.orgId}/members`, reader);
        expect(all.status).toBe(200);
        expect(all.body.members.map((m: any) => [m.user_id, m.email, m.role])).toEqual([
          [viewer.userId, viewer.email, 'viewer'],
          [admin.userId, admin.email, 'admin'],
          [w.userId, w.email, 'owner'],
        ]);
        expect(all.body.members[0].joined_at).toMatch(/Z$/);
      }
      const first = await t.api.get(`/orgs/${w.orgId}/members?limit=2`, w.session);
      expect(first.body.members).toHaveLength(2);
      const rest = await t.api.get(`/orgs/${w.orgId}/members?limit=2&cursor=${first.body.next_cursor}`, w.session);
      expect(rest.body.members.map((m: any) => m.user_id)).toEqual([w.userId]);
      expect(rest.body).not.toHaveProperty('next_cursor');
    });

    it('refuses members and viewers (403)', async () => {
      const w = await t.seed.world('owner');
      for (const role of ['member', 'viewer'] as const) {
        const c = await t.seed.colleague(w.orgId, role);
        expect((await t.api.get(`/orgs/${w.orgId}/members`, c.session)).status).toBe(403);
      }
    });

    it('answers 404 alike for a missing org and one the caller is not in', async () => {
      const w = await t.seed.world('owner');
      const other = await t.seed.world('owner');
      const missing = await t.api.get(`/orgs/${NOWHERE}/members`, w.session);
      const foreign = await t.api.get(`/orgs/${other.orgId}/members`, w.session);
      expect(missing.status).toBe(404);
      expect(foreign.status).toBe(404);
      expect(foreign.text).toBe(missing.text);
    });

    it('refuses an org_id that is not a UUID (400) and an API key (403)', async () => {
      const w = await t.seed.world('owner');
      expect400(await t.api.get('/orgs/acme/members', w.session), /org_id must be a UUID/);
      const key = await mintOk(t, w.session, { org_id: w.orgId });
      expect((await t.api.get(`/orgs/${w.orgId}/members`, key.key)).status).toBe(403);
    });
  });
});
