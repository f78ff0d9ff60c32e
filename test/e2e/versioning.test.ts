import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { OrgVersionRepository } from '../../src/versioning/org-version.repository.js';
import { TestClock } from '../support/clock.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { mintOk } from './api-keys.fixtures.js';

const CONTRACT = '2026-11-01';
const NEWEST = '2026-11-27';

describe('dated API versions', () => {
  let t: TestApp;
  const clock = new TestClock('2026-12-01T10:00:00.000Z');

  beforeAll(async () => {
    t = await startTestApp({ clock });
  });
  afterAll(async () => t?.close());

  const pin = async (orgId: string, version: string) => {
    await t.db.pool.query(`UPDATE orgs SET api_version = $2 WHERE id = $1`, [orgId, version]);
    await t.seed.acknowledged();
  };

  describe('GET /api-keys under each version', () => {
    it('answers the contract shape under 2026-11-01 and next_cursor: null under the newest version', async () => {
      const w = await t.seed.world('owner');
      await mintOk(t, w.session, { org_id: w.orgId, name: 'one' });
      const old = await t.api.get('/api-keys', w.session, { 'Api-Version': CONTRACT });
      expect(old.status).toBe(200);
      expect(old.headers.get('api-version')).toBe(CONTRACT);
      expect(Object.keys(old.body)).toEqual(['keys']);
      const now = await t.api.get('/api-keys', w.session, { 'Api-Version': NEWEST });
      expect(now.status).toBe(200);
      expect(now.headers.get('api-version')).toBe(NEWEST);
      expect(Object.keys(now.body)).toEqual(['keys', 'next_cursor']);
      expect(now.body.next_cursor).toBeNull();
      expect(now.body.keys).toEqual(old.body.keys.map((k: object) => ({ ...k, state: 'active' })));
    });

    it('sends `state` on every record under the newest version and `status` (never `state`) on a personal record before it', async () => {
      const w = await t.seed.world('owner');
      const policy = { approval_required_for: ['decisions:read'] };
      expect(
        (await t.api.request('PUT', `/orgs/${w.orgId}/key-policy`, { token: w.session, body: policy })).status,
      ).toBe(200);
      const held = await t.seed.colleague(w.orgId, 'member');
      const minted = await t.api.post('/api-keys', held.session, { org_id: w.orgId }, { 'Api-Version': NEWEST });
      expect(minted.status).toBe(201);
      expect(minted.body.state).toBe('pending');
      expect(minted.body).not.toHaveProperty('status');
      for (const version of [CONTRACT, '2026-11-26']) {
        const listed = await t.api.get('/api-keys', held.session, { 'Api-Version': version });
        expect(listed.body.keys[0]).toMatchObject({ id: minted.body.id, status: 'pending' });
        expect(listed.body.keys[0]).not.toHaveProperty('state');
        const org = await t.api.get(`/orgs/${w.orgId}/api-keys`, w.session, { 'Api-Version': version });
        expect(org.body.keys[0]).toMatchObject({ id: minted.body.id, status: 'pending', state: 'pending' });
      }
      const newest = await t.api.get('/api-keys', w.session, { 'Api-Version': NEWEST });
      expect(newest.body.keys.every((k: { state?: string }) => k.state === 'active')).toBe(true);
      const org = await t.api.get(`/orgs/${w.orgId}/api-keys`, w.session, { 'Api-Version': NEWEST });
      expect(org.body.keys.find((k: { id: string }) => k.id === minted.body.id)).not.toHaveProperty('status');
    });

    it('carries the cursor under both versions while more keys exist', async () => {
      const w = await t.seed.world('owner');
      for (const name of ['a', 'b']) {
        await mintOk(t, w.session, { org_id: w.orgId, name });
        clock.advance(1_000);
      }
      for (const version of [CONTRACT, NEWEST]) {
        const res = await t.api.get('/api-keys?limit=1', w.session, { 'Api-Version': version });
        expect(typeof res.body.next_cursor).toBe('string');
      }
    });
  });

  describe('which version a request is served with', () => {
    it('an org is pinned to 2026-11-01 unless moved: no header gives the contract shape', async () => {
      const w = await t.seed.world('owner');
      const res = await t.api.get('/api-keys', w.session);
      expect(res.headers.get('api-version')).toBe(CONTRACT);
      expect(res.body).toEqual({ keys: [] });
    });

    it("follows the org's pin, and the header overrides it", async () => {
      const w = await t.seed.world('owner');
      await t.api.get('/api-keys', w.session);
      await pin(w.orgId, NEWEST);
      await expect
        .poll(async () => (await t.api.get('/api-keys', w.session)).body)
        .toEqual({ keys: [], next_cursor: null });
      const overridden = await t.api.get('/api-keys', w.session, { 'Api-Version': CONTRACT });
      expect(overridden.headers.get('api-version')).toBe(CONTRACT);
      expect(overridden.body).toEqual({ keys: [] });
    });

    it("never lets the version lookup change a route's answer: an X-Org-Id the user is not in still lists", async () => {
      const w = await t.seed.world('owner');
      const other = await t.seed.world('owner');
      await pin(other.orgId, NEWEST);
      const res = await t.api.get('/api-keys', w.session, { 'X-Org-Id': other.orgId });
      expect(res.status).toBe(200);
      expect(res.headers.get('api-version')).toBe(CONTRACT);
      expect(res.body).toEqual({ keys: [] });
    });

    it('stamps the version on routes no change touches, for keys and sessions, and on refusals', async () => {
      const w = await t.seed.world('owner');
      const { key } = await mintOk(t, w.session, { org_id: w.orgId });
      await pin(w.orgId, NEWEST);
      await expect.poll(async () => (await t.api.get('/me', key)).headers.get('api-version')).toBe(NEWEST);
      expect((await t.api.get('/me', w.session)).headers.get('api-version')).toBe(NEWEST);
      const unauthenticated = await t.api.get('/me');
      expect(unauthenticated.status).toBe(401);
      expect(unauthenticated.headers.get('api-version')).toBe(CONTRACT);
      expect((await t.api.get('/me', undefined, { 'Api-Version': NEWEST })).headers.get('api-version')).toBe(NEWEST);
      expect((await t.api.get('/health/live')).headers.get('api-version')).toBe(CONTRACT);
    });

    it("reads an org's pin from memory on the hot path, and once again after the org changes", async () => {
      const w = await t.seed.world('owner');
      const { key } = await mintOk(t, w.session, { org_id: w.orgId });
      expect((await t.api.get('/me', key)).status).toBe(200);
      const reads = vi.spyOn(t.app.get(OrgVersionRepository), 'pinOf');
      try {
        for (let i = 0; i < 5; i++) expect((await t.api.get('/me', key)).headers.get('api-version')).toBe(CONTRACT);
        expect(reads).not.toHaveBeenCalled();
        await pin(w.orgId, NEWEST);
        await expect.poll(async () => (await t.api.get('/me', key)).headers.get('api-version')).toBe(NEWEST);
        expect(reads).toHaveBeenCalled();
      } finally {
        reads.mockRestore();
      }
    });

    it('answers an org pinned to a version that no longer exists with the oldest supported one and a Warning', async () => {
      const w = await t.seed.world('owner');
      await pin(w.orgId, '2025-06-01');
      await expect
        .poll(async () => (await t.api.get('/api-keys', w.session)).headers.get('warning') ?? '')
        .toMatch(/^299 - "API version 2025-06-01 is no longer supported; answered with 2026-11-01/);
      const res = await t.api.get('/api-keys', w.session);
      expect(res.status).toBe(200);
      expect(res.headers.get('api-version')).toBe(CONTRACT);
      expect(res.body).toEqual({ keys: [] });
    });
  });

  describe('bad input', () => {
    it.each([
      ['not-a-date', /is not a date/],
      ['2026-02-30', /is not a date/],
      ['2099-01-01', /is in the future/],
      ['2020-01-01', /predates the first version/],
      ['2026-11-15', /is not a version of this API/],
    ])('refuses Api-Version %s with a 400 naming the header and the versions', async (version, why) => {
      const w = await t.seed.world('owner');
      const res = await t.api.get('/api-keys', w.session, { 'Api-Version': version });
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(why);
      expect(res.body.message).toContain(`Api-Version header "${version}"`);
      expect(res.body.message).toContain(`versions: ${CONTRACT}, 2026-11-26, ${NEWEST}`);
    });
  });

  describe('OpenAPI per version', () => {
    const listSchema = (doc: any) => {
      const ref: string = doc.paths['/api-keys'].get.responses['200'].content['application/json'].schema.$ref;
      return doc.components.schemas[ref.split('/').pop()!];
    };

    it('serves the newest by default and each version on request, with the difference visible', async () => {
      const byDefault = await t.api.get('/openapi.json');
      const newest = await t.api.get(`/openapi.json?version=${NEWEST}`);
      const contract = await t.api.get(`/openapi.json?version=${CONTRACT}`);
      expect(byDefault.body).toEqual(newest.body);
      expect(listSchema(newest.body).required).toContain('next_cursor');
      expect(listSchema(newest.body).properties.next_cursor.nullable).toBe(true);
      expect(listSchema(contract.body).required ?? []).not.toContain('next_cursor');
      expect(contract.body.info.description).toContain(`API version ${CONTRACT}`);
      expect(contract.body.info.description).toContain(`**${NEWEST}**`);
      expect(contract.body.components.parameters.ApiVersion.in).toBe('header');
    });

    it('refuses a version it does not serve', async () => {
      const res = await t.api.get('/openapi.json?version=1999-01-01');
      expect(res.status).toBe(400);
      expect(res.body.message).toContain(`version must be one of ${CONTRACT}, 2026-11-26, ${NEWEST}`);
    });

    it('documents 413 and 415 on every operation that takes a body', async () => {
      const doc = (await t.api.get('/openapi.json')).body;
      const withBody = Object.values<any>(doc.paths).flatMap((item) =>
        Object.values<any>(item).filter((op) => op.requestBody),
      );
      expect(withBody.map((op) => op.operationId)).toEqual(
        expect.arrayContaining([
          'rotateApiKey',
          'revokeLeakedCredentials',
          'githubSecretScanning',
          'createWebhook',
          'updateWebhook',
        ]),
      );
      for (const op of withBody)
        expect(Object.keys(op.responses), op.operationId).toEqual(expect.arrayContaining(['413', '415']));
    });
  });
});
