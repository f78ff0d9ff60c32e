import { createHash, createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertKeyRow, TEST_API_KEY_SECRET } from '../support/factories.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** What each leaked thing lets an attacker do, and what it does not (SECURITY.md cites these). */
describe('leaked credentials', () => {
  let t: TestApp;
  const countKeys = async () =>
    (await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys')).rows[0].n;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  describe('a leaked API key', () => {
    it('reads its own org through /me and /usage, and nothing else: X-Org-Id does not move it to another org', async () => {
      const w = await t.seed.world('owner');
      const elsewhere = await t.seed.world('owner');
      await t.seed.member(elsewhere.orgId, w.userId, 'owner');
      const key = (await t.api.post('/api-keys', w.session, { org_id: w.orgId })).body.key;

      const me = await t.api.get('/me', key, { 'x-org-id': elsewhere.orgId });
      expect(me.status).toBe(200);
      expect(me.body.org_id).toBe(w.orgId);
      expect(me.body.scopes).toEqual(['decisions:read']);
      expect((await t.api.get('/usage', key, { 'x-org-id': elsewhere.orgId })).status).toBe(200);
    });

    it('cannot mint, list or revoke keys, and a refused call writes nothing', async () => {
      const w = await t.seed.world('owner');
      const minted = (
        await t.api.post('/api-keys', w.session, { org_id: w.orgId, scopes: ['decisions:read', 'decisions:write'] })
      ).body;
      const before = await countKeys();
      expect((await t.api.post('/api-keys', minted.key, { org_id: w.orgId })).status).toBe(403);
      expect((await t.api.get('/api-keys', minted.key)).status).toBe(403);
      expect((await t.api.delete(`/api-keys/${minted.id}`, minted.key)).status).toBe(403);
      expect(await countKeys()).toBe(before);
      expect((await t.api.get('/me', minted.key)).status, 'it did not revoke itself either').toBe(200);
    });

    it('stops working when revoked, when its owner leaves the org, and shrinks when its owner is demoted', async () => {
      const w = await t.seed.world('owner');
      const a = (
        await t.api.post('/api-keys', w.session, { org_id: w.orgId, scopes: ['decisions:read', 'decisions:write'] })
      ).body;
      const b = (await t.api.post('/api-keys', w.session, { org_id: w.orgId })).body;

      await t.seed.member(w.orgId, w.userId, 'viewer');
      expect((await t.api.get('/me', a.key)).body.scopes).toEqual(['decisions:read']);

      expect((await t.api.delete(`/api-keys/${b.id}`, w.session)).status).toBe(204);
      expect((await t.api.get('/me', b.key)).status).toBe(401);

      await t.seed.removeMember(w.orgId, w.userId);
      expect((await t.api.get('/me', a.key)).status).toBe(401);
    });
  });

  describe('a leaked session', () => {
    it('acts as its user, but only in orgs the user belongs to', async () => {
      const w = await t.seed.world('owner');
      const other = await t.seed.world('owner');
      expect((await t.api.post('/api-keys', w.session, { org_id: other.orgId })).status).toBe(404);
      expect((await t.api.get('/me', w.session, { 'x-org-id': other.orgId })).status).toBe(404);
      expect((await t.api.get('/api-keys', w.session)).body.keys).toEqual([]);
    });

    it("can mint keys, which die with the user's membership and with revocation", async () => {
      const w = await t.seed.world('member');
      const minted = (await t.api.post('/api-keys', w.session, { org_id: w.orgId })).body;
      expect((await t.api.get('/me', minted.key)).status).toBe(200);
      await t.seed.removeMember(w.orgId, w.userId);
      expect((await t.api.get('/me', minted.key)).status).toBe(401);
    });

    it('expires with the token: an expired session is refused', async () => {
      const w = await t.seed.world('owner');
      const expired = t.seed.session(w.userId, w.email, { ttlSeconds: -10 });
      expect((await t.api.get('/me', expired)).status).toBe(401);
    });
  });

  describe('a database dump (or write access) without API_KEY_SECRET', () => {
    it('cannot turn a stored row into a working key, nor plant one: verification needs the HMAC under the secret', async () => {
      const w = await t.seed.world('owner');
      const plant = async (hash: (key: string) => Buffer) => {
        const { key } = await insertKeyRow(t.db.pool, { userId: w.userId, orgId: w.orgId, name: 'planted', hash });
        return (await t.api.get('/me', key)).status;
      };
      expect(await plant((k) => createHash('sha256').update(k).digest()), 'plain SHA-256').toBe(401);
      expect(
        await plant((k) => createHmac('sha256', 'a-guessed-secret-0123456789abcdef0123').update(k).digest()),
        'HMAC under a guessed secret',
      ).toBe(401);
      // The control: with the real secret the same planting works, so the secret is what stands in the way.
      expect(
        await plant((k) => createHmac('sha256', TEST_API_KEY_SECRET).update(k).digest()),
        'HMAC under API_KEY_SECRET',
      ).toBe(200);
    });
  });
});
