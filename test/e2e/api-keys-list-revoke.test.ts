import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../support/clock.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { expect400, listKeys, mintOk, NOWHERE, READ, WRITE } from './api-keys.fixtures.js';

const DAY_MS = 86_400_000;

describe('GET /api-keys and DELETE /api-keys/{keyID}', () => {
  let t: TestApp;
  const clock = new TestClock('2031-05-17T08:30:00.000Z');

  beforeAll(async () => {
    t = await startTestApp({ clock });
  });
  afterAll(async () => t?.close());

  describe('GET /api-keys: list', () => {
    it('lists every key the caller minted, newest first', async () => {
      const w = await t.seed.world('owner');
      const minted = [];
      for (const name of ['first', 'second', 'third']) {
        minted.push(await mintOk(t, w.session, { org_id: w.orgId, name }));
        clock.advance(1_000);
      }
      const keys = await listKeys(t, w.session);
      expect(keys.map((k) => k.name)).toEqual(['third', 'second', 'first']);
      expect(keys.map((k) => k.id)).toEqual(minted.map((m) => m.id).reverse());
    });

    it('shows each key as minted, without the key itself', async () => {
      const w = await t.seed.world('owner');
      const { key, ...record } = await mintOk(t, w.session, {
        org_id: w.orgId,
        name: 'ci',
        scopes: [READ, WRITE],
        expires_in_days: 7,
      });
      const res = await t.api.get('/api-keys', w.session);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['keys']);
      expect(res.body.keys).toEqual([record]);
      expect(res.text).not.toContain(key);
      expect(res.body.keys[0]).not.toHaveProperty('key');
      expect(res.body.keys[0]).not.toHaveProperty('last_used_at');
      expect(res.body.keys[0]).not.toHaveProperty('revoked_at');
    });

    it('keeps revoked and expired keys in the list', async () => {
      const w = await t.seed.world('owner');
      const expiring = await mintOk(t, w.session, { org_id: w.orgId, name: 'expiring', expires_in_days: 1 });
      clock.advance(1_000);
      const revoked = await mintOk(t, w.session, { org_id: w.orgId, name: 'revoked' });
      expect((await t.api.delete(`/api-keys/${revoked.id}`, w.session)).status).toBe(204);
      clock.advance(2 * DAY_MS);
      expect((await t.api.get('/me', expiring.key)).status).toBe(401);

      const keys = await listKeys(t, w.session);
      expect(keys.map((k) => k.id)).toEqual([revoked.id, expiring.id]);
      expect(keys[0].revoked_at).toBeDefined();
      expect(keys[1].expires_at).toBe(expiring.expires_at);
      expect(keys[1]).not.toHaveProperty('revoked_at');
    });

    it("shows only the caller's own keys, not those of others in the same org", async () => {
      const w = await t.seed.world('owner');
      const colleague = await t.seed.user();
      await t.seed.member(w.orgId, colleague.id, 'member');
      await t.seed.workspace(w.orgId, colleague.id);
      const colleagueSession = t.seed.session(colleague.id, colleague.email);
      const mine = await mintOk(t, w.session, { org_id: w.orgId, name: 'mine' });
      const theirs = await mintOk(t, colleagueSession, { org_id: w.orgId, name: 'theirs' });
      expect((await listKeys(t, w.session)).map((k) => k.id)).toEqual([mine.id]);
      expect((await listKeys(t, colleagueSession)).map((k) => k.id)).toEqual([theirs.id]);
    });

    it('narrows the list to one org with ?org_id=', async () => {
      const w = await t.seed.world('owner');
      const second = await t.seed.org();
      await t.seed.member(second, w.userId, 'member');
      await t.seed.workspace(second, w.userId);
      const inFirst = await mintOk(t, w.session, { org_id: w.orgId });
      clock.advance(1_000);
      const inSecond = await mintOk(t, w.session, { org_id: second });

      expect((await listKeys(t, w.session)).map((k) => k.id)).toEqual([inSecond.id, inFirst.id]);
      expect((await listKeys(t, w.session, `?org_id=${w.orgId}`)).map((k) => k.id)).toEqual([inFirst.id]);
      expect((await listKeys(t, w.session, `?org_id=${second.toUpperCase()}`)).map((k) => k.id)).toEqual([inSecond.id]);
    });

    it('answers an empty list for an org of the caller with no keys', async () => {
      const w = await t.seed.world('viewer');
      expect(await listKeys(t, w.session, `?org_id=${w.orgId}`)).toEqual([]);
      expect(await listKeys(t, w.session)).toEqual([]);
    });

    it.each([['not-a-uuid'], [''], [`${NOWHERE}0`]])('refuses ?org_id=%s, which is not a UUID (400)', async (bad) => {
      const w = await t.seed.world('owner');
      expect400(await t.api.get(`/api-keys?org_id=${encodeURIComponent(bad)}`, w.session), /org_id/, /UUID/);
    });

    it('refuses ?org_id= of a missing org and of a foreign org alike (404, same body)', async () => {
      const w = await t.seed.world('owner');
      const foreign = await t.seed.world('owner');
      await mintOk(t, foreign.session, { org_id: foreign.orgId });
      const missing = await t.api.get(`/api-keys?org_id=${NOWHERE}`, w.session);
      const notMine = await t.api.get(`/api-keys?org_id=${foreign.orgId}`, w.session);
      expect(missing.status).toBe(404);
      expect(notMine.status).toBe(404);
      expect(notMine.text).toBe(missing.text);
    });

    it('refuses an API key (403)', async () => {
      const w = await t.seed.world('owner');
      const { key } = await mintOk(t, w.session, { org_id: w.orgId, scopes: [READ, WRITE] });
      const res = await t.api.get('/api-keys', key);
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ statusCode: 403, error: 'Forbidden' });
      expect(res.text).not.toContain(key);
      expect((await t.api.get(`/api-keys?org_id=not-a-uuid`, key)).status).toBe(403);
    });

    it('refuses a request with no credential (401)', async () => {
      const res = await t.api.get('/api-keys');
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    });
  });

  describe('DELETE /api-keys/{keyID}: revoke', () => {
    it('answers 204 with an empty body and keeps the record, now with revoked_at', async () => {
      const w = await t.seed.world('owner');
      const { key, ...record } = await mintOk(t, w.session, { org_id: w.orgId, name: 'to revoke' });
      clock.advance(5_000);
      const res = await t.api.delete(`/api-keys/${record.id}`, w.session);
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      const [listed] = await listKeys(t, w.session);
      expect(listed).toEqual({ ...record, revoked_at: clock.now().toISOString() });
      expect(listed).not.toHaveProperty('key');
    });

    it('makes the key fail with 401 on the very next request', async () => {
      const w = await t.seed.world('owner');
      const { key, id } = await mintOk(t, w.session, { org_id: w.orgId });
      expect((await t.api.get('/me', key)).status).toBe(200);
      expect((await t.api.delete(`/api-keys/${id}`, w.session)).status).toBe(204);
      const me = await t.api.get('/me', key);
      expect(me.status).toBe(401);
      expect(me.headers.get('www-authenticate')).toContain('error="invalid_token"');
      expect((await t.api.get('/usage', key)).status).toBe(401);
    });

    it('answers 204 again for an already revoked key and leaves revoked_at unchanged', async () => {
      const w = await t.seed.world('owner');
      const { id } = await mintOk(t, w.session, { org_id: w.orgId });
      expect((await t.api.delete(`/api-keys/${id}`, w.session)).status).toBe(204);
      const [first] = await listKeys(t, w.session);
      clock.advance(60_000);
      const again = await t.api.delete(`/api-keys/${id}`, w.session);
      expect(again.status).toBe(204);
      expect(again.text).toBe('');
      const [second] = await listKeys(t, w.session);
      expect(second.revoked_at).toBe(first.revoked_at);
    });

    it.each([['not-a-uuid'], ['12345'], [`${NOWHERE}0`], ['0b9e4a7e3c554c1e9d9a5b8f1e2d7c61']])(
      'refuses keyID %s, which is not a UUID (400)',
      async (bad) => {
        const w = await t.seed.world('owner');
        expect400(await t.api.delete(`/api-keys/${bad}`, w.session), /keyID/, /UUID/);
      },
    );

    it("answers a missing key and someone else's key alike (404, same body) and leaves the other key working", async () => {
      const w = await t.seed.world('owner');
      const other = await t.seed.world('owner');
      const theirs = await mintOk(t, other.session, { org_id: other.orgId });
      const missing = await t.api.delete(`/api-keys/${NOWHERE}`, w.session);
      const notMine = await t.api.delete(`/api-keys/${theirs.id}`, w.session);
      expect(missing.status).toBe(404);
      expect(notMine.status).toBe(404);
      expect(notMine.text).toBe(missing.text);
      expect(missing.body).toMatchObject({ statusCode: 404, error: 'Not Found' });
      expect((await t.api.get('/me', theirs.key)).status).toBe(200);
      expect((await listKeys(t, other.session))[0]).not.toHaveProperty('revoked_at');
    });

    it("refuses even a colleague's key in the same org (404)", async () => {
      const w = await t.seed.world('owner');
      const colleague = await t.seed.user();
      await t.seed.member(w.orgId, colleague.id, 'admin');
      const theirs = await mintOk(t, w.session, { org_id: w.orgId });
      const res = await t.api.delete(`/api-keys/${theirs.id}`, t.seed.session(colleague.id, colleague.email));
      expect(res.status).toBe(404);
      expect((await t.api.get('/me', theirs.key)).status).toBe(200);
    });

    it('refuses an API key (403), even one revoking itself', async () => {
      const w = await t.seed.world('owner');
      const { key, id } = await mintOk(t, w.session, { org_id: w.orgId, scopes: [READ, WRITE] });
      const res = await t.api.delete(`/api-keys/${id}`, key);
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ statusCode: 403, error: 'Forbidden' });
      expect((await t.api.get('/me', key)).status).toBe(200);
      expect((await listKeys(t, w.session))[0]).not.toHaveProperty('revoked_at');
    });

    it('refuses a request with no credential (401) before looking at the id', async () => {
      const none = await t.api.delete('/api-keys/not-a-uuid');
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toBe('Bearer');
    });
  });

  describe('two instances sharing one database', () => {
    // Same configuration on both: @nestjs/passport keeps strategies on a process-wide singleton,
    // so in one process the instance started last verifies for both. What this shows is that a
    // revoke written through one instance's connections is seen through the other's at once.
    let b: TestApp;
    beforeAll(async () => {
      b = await startTestApp({ clock, db: t.db });
    });
    afterAll(async () => b?.close());

    it('refuses a key revoked on one instance on the other from the moment the 204 is sent', async () => {
      const w = await t.seed.world('owner');
      const { key, id } = await mintOk(t, w.session, { org_id: w.orgId });
      expect((await b.api.get('/me', key)).status).toBe(200);
      expect((await t.api.delete(`/api-keys/${id}`, w.session)).status).toBe(204);
      expect((await b.api.get('/me', key)).status).toBe(401);
      expect((await t.api.get('/me', key)).status).toBe(401);
    });
  });
});
