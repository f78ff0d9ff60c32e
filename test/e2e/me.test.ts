import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertKeyRow } from '../support/factories.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const PRINCIPAL_FIELDS = ['email', 'org_id', 'org_member_count', 'org_role', 'scopes', 'user_id'];

describe('GET /me', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  async function mint(session: string, orgId: string, scopes?: string[]): Promise<string> {
    const res = await t.api.post('/api-keys', session, { org_id: orgId, ...(scopes ? { scopes } : {}) });
    expect(res.status).toBe(201);
    return res.body.key;
  }

  /** A user who is a member of two orgs (roles given) and has a workspace in each. */
  async function userInTwoOrgs(roleA: 'owner' | 'viewer' = 'owner', roleB: 'owner' | 'viewer' | 'member' = 'member') {
    const orgA = await t.seed.org('free', 'A');
    const orgB = await t.seed.org('pro', 'B');
    const user = await t.seed.user();
    await t.seed.member(orgA, user.id, roleA);
    await t.seed.member(orgB, user.id, roleB);
    await t.seed.workspace(orgA, user.id);
    await t.seed.workspace(orgB, user.id);
    return { orgA, orgB, user };
  }

  describe('with an API key', () => {
    it('reports the owner, the key’s org, its scopes, the owner’s role and the member count, and no other field', async () => {
      const w = await t.seed.world('owner');
      for (let i = 0; i < 2; i++) await t.seed.member(w.orgId, (await t.seed.user()).id, 'viewer');
      const key = await mint(w.session, w.orgId, ['decisions:read', 'decisions:write']);

      const res = await t.api.get('/me', key);

      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(PRINCIPAL_FIELDS);
      expect(res.body).toEqual({
        user_id: w.userId,
        org_id: w.orgId,
        email: w.email,
        scopes: ['decisions:read', 'decisions:write'],
        org_role: 'owner',
        org_member_count: 3,
      });
    });

    it('shows the minted scopes cut down to the owner’s current ceiling, and the current role', async () => {
      const w = await t.seed.world('member');
      const key = await mint(w.session, w.orgId, ['decisions:read', 'decisions:write']);

      await t.seed.member(w.orgId, w.userId, 'viewer');
      const demoted = await t.api.get('/me', key);
      expect(demoted.status).toBe(200);
      expect(demoted.body).toMatchObject({ scopes: ['decisions:read'], org_role: 'viewer' });

      await t.seed.member(w.orgId, w.userId, 'admin');
      const promoted = await t.api.get('/me', key);
      expect(promoted.body).toMatchObject({ scopes: ['decisions:read', 'decisions:write'], org_role: 'admin' });
    });

    it('never widens a key beyond what it was minted with, whatever the owner’s role', async () => {
      const w = await t.seed.world('owner');
      const key = await mint(w.session, w.orgId);

      const res = await t.api.get('/me', key);

      expect(res.body.scopes).toEqual(['decisions:read']);
      expect(res.body.org_role).toBe('owner');
    });

    it('answers for the key’s own org, whatever other orgs the owner is in and whatever X-Org-Id says', async () => {
      const { orgA, orgB, user } = await userInTwoOrgs('owner', 'member');
      await t.seed.member(orgB, (await t.seed.user()).id, 'viewer');
      const key = await mint(t.seed.session(user.id, user.email, { orgId: orgB }), orgB);

      const res = await t.api.get('/me', key, { 'x-org-id': orgA });

      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ org_id: orgB, org_role: 'member', org_member_count: 2 });
    });

    it('needs no scope: a key that holds only decisions:write still proves itself', async () => {
      const w = await t.seed.world('member');
      const key = (await insertKeyRow(t.db.pool, { userId: w.userId, orgId: w.orgId, scopes: ['decisions:write'] }))
        .key;

      const res = await t.api.get('/me', key);

      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ user_id: w.userId, scopes: ['decisions:write'] });
    });

    it('stops verifying once the owner has left the key’s org (401)', async () => {
      const w = await t.seed.world('owner');
      const key = await mint(w.session, w.orgId);
      await t.seed.removeMember(w.orgId, w.userId);

      const res = await t.api.get('/me', key);

      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
    });
  });

  describe('with a session', () => {
    it('operates in the org named by the org_id claim, with the role’s ceiling as scopes', async () => {
      const { orgA, orgB, user } = await userInTwoOrgs('owner', 'viewer');
      await t.seed.member(orgB, (await t.seed.user()).id, 'owner');

      const res = await t.api.get('/me', t.seed.session(user.id, user.email, { orgId: orgB }));

      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(PRINCIPAL_FIELDS);
      expect(res.body).toEqual({
        user_id: user.id,
        org_id: orgB,
        email: user.email,
        scopes: ['decisions:read'],
        org_role: 'viewer',
        org_member_count: 2,
      });
      expect(orgA).not.toBe(orgB);
    });

    it('prefers the org_id claim over an X-Org-Id header', async () => {
      const { orgA, orgB, user } = await userInTwoOrgs();

      const res = await t.api.get('/me', t.seed.session(user.id, user.email, { orgId: orgA }), { 'x-org-id': orgB });

      expect(res.body.org_id).toBe(orgA);
    });

    it('operates in the org named by X-Org-Id when the token has no org_id claim', async () => {
      const { orgB, user } = await userInTwoOrgs('owner', 'member');

      const res = await t.api.get('/me', t.seed.session(user.id, user.email), { 'x-org-id': orgB });

      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        org_id: orgB,
        org_role: 'member',
        scopes: ['decisions:read', 'decisions:write'],
        org_member_count: 1,
      });
    });

    it('accepts an upper-case X-Org-Id and answers with the canonical id', async () => {
      const { orgB, user } = await userInTwoOrgs();

      const res = await t.api.get('/me', t.seed.session(user.id, user.email), { 'x-org-id': orgB.toUpperCase() });

      expect(res.body.org_id).toBe(orgB);
    });

    it('falls back to the user’s only org when nothing names one', async () => {
      const w = await t.seed.world('admin');

      const res = await t.api.get('/me', w.session);

      expect(res.body).toEqual({
        user_id: w.userId,
        org_id: w.orgId,
        email: w.email,
        scopes: ['decisions:read', 'decisions:write'],
        org_role: 'admin',
        org_member_count: 1,
      });
    });

    it('answers 200 with no org for a user in two orgs who names neither', async () => {
      const { user } = await userInTwoOrgs();

      const res = await t.api.get('/me', t.seed.session(user.id, user.email));

      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        user_id: user.id,
        org_id: null,
        email: user.email,
        scopes: [],
        org_role: null,
        org_member_count: 0,
      });
    });

    it('answers 200 with no org for a user who belongs to no org', async () => {
      const user = await t.seed.user();

      const res = await t.api.get('/me', t.seed.session(user.id, user.email));

      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        user_id: user.id,
        org_id: null,
        email: user.email,
        scopes: [],
        org_role: null,
        org_member_count: 0,
      });
    });

    it('answers 404 for an org_id claim naming an org the user is not in, exactly as for one that does not exist', async () => {
      const w = await t.seed.world('owner');
      const foreign = await t.seed.org();

      const notMine = await t.api.get('/me', t.seed.session(w.userId, w.email, { orgId: foreign }));
      const missing = await t.api.get('/me', t.seed.session(w.userId, w.email, { orgId: randomUUID() }));

      expect(notMine.status).toBe(404);
      expect(missing.status).toBe(404);
      expect(notMine.body).toEqual(missing.body);
    });

    it('answers 404 for an X-Org-Id naming an org the user is not in, exactly as for one that does not exist', async () => {
      const w = await t.seed.world('owner');
      const foreign = await t.seed.org();

      const notMine = await t.api.get('/me', w.session, { 'x-org-id': foreign });
      const missing = await t.api.get('/me', w.session, { 'x-org-id': randomUUID() });

      expect(notMine.status).toBe(404);
      expect(missing.status).toBe(404);
      expect(notMine.body).toEqual(missing.body);
      expect(notMine.body).toMatchObject({ statusCode: 404, error: 'Not Found' });
    });

    it('answers 400 naming X-Org-Id when the header is not a UUID', async () => {
      const w = await t.seed.world('owner');

      const res = await t.api.get('/me', w.session, { 'x-org-id': 'acme' });

      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expect(res.body.message).toContain('X-Org-Id');
    });

    it('gives a viewer read only and every other role both scopes', async () => {
      for (const [role, scopes] of [
        ['viewer', ['decisions:read']],
        ['member', ['decisions:read', 'decisions:write']],
        ['admin', ['decisions:read', 'decisions:write']],
        ['owner', ['decisions:read', 'decisions:write']],
      ] as const) {
        const w = await t.seed.world(role);
        const res = await t.api.get('/me', w.session);
        expect(res.body, role).toMatchObject({ org_role: role, scopes });
      }
    });
  });

  it('answers 401 with error="invalid_token" for a token that does not verify', async () => {
    const res = await t.api.get('/me', 'not-a-jwt');

    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });
});
