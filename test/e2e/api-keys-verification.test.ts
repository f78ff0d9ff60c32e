import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LastUsedWriter } from '../../src/auth/last-used-writer.js';
import { TestClock } from '../support/clock.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { BEHIND_THE_RESPONSE, listKeys, mintOk, READ, RFC3339, WRITE } from './api-keys.fixtures.js';

const DAY_MS = 86_400_000;

describe('what a minted key is worth over its life', () => {
  let t: TestApp;
  const clock = new TestClock('2031-05-17T08:30:00.000Z');

  beforeAll(async () => {
    t = await startTestApp({ clock });
  });
  afterAll(async () => t?.close());

  const lastUsedOf = async (session: string, id: string) =>
    (await listKeys(t, session)).find((k) => k.id === id)?.last_used_at as string | undefined;

  describe('expiry', () => {
    it('verifies until just before expires_at and refuses the key (401) from expires_at on, while it stays listed', async () => {
      const w = await t.seed.world('owner');
      const { key, id, expires_at } = await mintOk(t, w.session, { org_id: w.orgId, expires_in_days: 3 });
      clock.set(new Date(Date.parse(expires_at) - 1));
      expect((await t.api.get('/me', key)).status).toBe(200);
      clock.set(expires_at);
      const atExpiry = await t.api.get('/me', key);
      expect(atExpiry.status).toBe(401);
      expect(atExpiry.headers.get('www-authenticate')).toContain('error="invalid_token"');
      clock.advance(DAY_MS);
      expect((await t.api.get('/usage', key)).status).toBe(401);
      expect((await listKeys(t, w.session)).map((k) => k.id)).toEqual([id]);
    });

    it('never expires a key minted with expires_in_days 0', async () => {
      const w = await t.seed.world('owner');
      const { key } = await mintOk(t, w.session, { org_id: w.orgId });
      clock.advance(400 * DAY_MS);
      expect((await t.api.get('/me', key)).status).toBe(200);
    });
  });

  describe("the owner's standing in the key's org", () => {
    it('refuses the key (401) once its owner is no longer a member of the org', async () => {
      const w = await t.seed.world('owner');
      const { key } = await mintOk(t, w.session, { org_id: w.orgId });
      expect((await t.api.get('/me', key)).status).toBe(200);
      await t.seed.removeMember(w.orgId, w.userId);
      const me = await t.api.get('/me', key);
      expect(me.status).toBe(401);
      expect((await t.api.get('/usage', key)).status).toBe(401);
    });

    it('shrinks the key to decisions:read at once when its owner is lowered from owner to viewer', async () => {
      const w = await t.seed.world('owner');
      const { key } = await mintOk(t, w.session, { org_id: w.orgId, scopes: [READ, WRITE] });
      const before = await t.api.get('/me', key);
      expect([...before.body.scopes].sort()).toEqual([READ, WRITE]);
      expect(before.body.org_role).toBe('owner');

      await t.seed.member(w.orgId, w.userId, 'viewer');
      const after = await t.api.get('/me', key);
      expect(after.status).toBe(200);
      expect(after.body.scopes).toEqual([READ]);
      expect(after.body.org_role).toBe('viewer');
    });

    it('leaves a write-only key with no scope once its owner becomes a viewer, so a read route refuses it (403)', async () => {
      const w = await t.seed.world('member');
      const { key } = await mintOk(t, w.session, { org_id: w.orgId, scopes: [WRITE] });
      await t.seed.member(w.orgId, w.userId, 'viewer');
      const me = await t.api.get('/me', key);
      expect(me.status).toBe(200);
      expect(me.body.scopes).toEqual([]);
      expect((await t.api.get('/usage', key)).status).toBe(403);
    });
  });

  describe('last_used_at', () => {
    it('is absent before the first use and written, behind the response, after it', async () => {
      const w = await t.seed.world('owner');
      const { key, id } = await mintOk(t, w.session, { org_id: w.orgId });
      expect(await lastUsedOf(w.session, id)).toBeUndefined();
      clock.advance(10_000);
      const usedAt = clock.now().toISOString();
      expect((await t.api.get('/me', key)).status).toBe(200);
      await expect.poll(() => lastUsedOf(w.session, id), BEHIND_THE_RESPONSE).toBeDefined();
      const seen = await lastUsedOf(w.session, id);
      expect(seen).toMatch(RFC3339);
      expect(seen).toBe(usedAt);
    });

    it('is not moved by a second use within a minute, and moved by a use more than a minute later', async () => {
      const w = await t.seed.world('owner');
      const { key, id } = await mintOk(t, w.session, { org_id: w.orgId });
      const firstAt = clock.now().toISOString();
      expect((await t.api.get('/me', key)).status).toBe(200);
      await expect.poll(() => lastUsedOf(w.session, id), BEHIND_THE_RESPONSE).toBeDefined();
      expect(await lastUsedOf(w.session, id)).toBe(firstAt);

      clock.advance(59_000);
      expect((await t.api.get('/me', key)).status).toBe(200);
      // The use has been counted by now (verification runs before the response); drain what it queued.
      await t.app.get(LastUsedWriter).flush();
      expect(await lastUsedOf(w.session, id)).toBe(firstAt);

      clock.advance(2_000);
      const laterAt = clock.now().toISOString();
      expect((await t.api.get('/me', key)).status).toBe(200);
      await expect.poll(() => lastUsedOf(w.session, id), BEHIND_THE_RESPONSE).not.toBe(firstAt);
      expect(await lastUsedOf(w.session, id)).toBe(laterAt);
    });

    it('is written for a key used by many requests at once, once', async () => {
      const w = await t.seed.world('owner');
      const { key, id } = await mintOk(t, w.session, { org_id: w.orgId });
      const usedAt = clock.now().toISOString();
      const results = await Promise.all(Array.from({ length: 20 }, () => t.api.get('/me', key)));
      expect(results.every((r) => r.status === 200)).toBe(true);
      await expect.poll(() => lastUsedOf(w.session, id), BEHIND_THE_RESPONSE).toBeDefined();
      expect(await lastUsedOf(w.session, id)).toBe(usedAt);
    });

    it('is not moved by requests a guard refuses: outside allowed_cidrs, a missing scope, spent credits', async () => {
      const w = await t.seed.world('owner');
      const { key, id } = await mintOk(t, w.session, { org_id: w.orgId, scopes: [WRITE] });
      const usedAt = clock.now().toISOString();
      expect((await t.api.get('/me', key)).status).toBe(200);
      await expect.poll(() => lastUsedOf(w.session, id), BEHIND_THE_RESPONSE).toBe(usedAt);
      const writer = t.app.get(LastUsedWriter);
      const patch = async (body: unknown) =>
        expect((await t.api.request('PATCH', `/api-keys/${id}`, { token: w.session, body })).status).toBe(200);

      // A key kept to an office network, tried hourly from outside, stays as stale as it is.
      await patch({ allowed_cidrs: ['203.0.113.0/24'] });
      for (let hour = 1; hour <= 3; hour++) {
        clock.advance(3_600_000);
        expect((await t.api.get('/me', key)).status).toBe(403);
        await writer.flush();
      }
      expect(await lastUsedOf(w.session, id)).toBe(usedAt);

      // Inside the network but without the route's scope: refused, not a use either.
      await patch({ allowed_cidrs: ['127.0.0.0/8', '::1/128'] });
      clock.advance(3_600_000);
      expect((await t.api.get('/usage', key)).status).toBe(403);
      await writer.flush();
      expect(await lastUsedOf(w.session, id)).toBe(usedAt);

      // Its credits spent: 429, not a use.
      await patch({ credits: { remaining: 0 } });
      clock.advance(3_600_000);
      expect((await t.api.get('/me', key)).status).toBe(429);
      await writer.flush();
      expect(await lastUsedOf(w.session, id)).toBe(usedAt);

      // Admitted again: a use.
      await patch({ credits: { remaining: 5 } });
      clock.advance(3_600_000);
      const laterAt = clock.now().toISOString();
      expect((await t.api.get('/me', key)).status).toBe(200);
      await expect.poll(() => lastUsedOf(w.session, id), BEHIND_THE_RESPONSE).toBe(laterAt);
    });

    it('is not touched by a failed use of a revoked key', async () => {
      const w = await t.seed.world('owner');
      const { key, id } = await mintOk(t, w.session, { org_id: w.orgId });
      expect((await t.api.delete(`/api-keys/${id}`, w.session)).status).toBe(204);
      expect((await t.api.get('/me', key)).status).toBe(401);
      await t.app.get(LastUsedWriter).flush();
      expect(await lastUsedOf(w.session, id)).toBeUndefined();
    });
  });
});
