import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { OrgVersionRepository } from '../../src/versioning/org-version.repository.js';
import { TestClock } from '../support/clock.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { mintOk } from './api-keys.fixtures.js';

const CONTRACT = '2026-11-01';
const NEWEST = '2026-11-27';

/** Versioning as the standalone server's Fastify hooks: on every route, with no interceptor on the untouched ones. */
describe('versioning hooks', () => {
  let t: TestApp;
  const clock = new TestClock('2026-12-01T10:00:00.000Z');

  beforeAll(async () => {
    t = await startTestApp({ clock });
  });
  afterAll(async () => t?.close());

  it('refuses a bad Api-Version on every route, before authentication, naming the header and the versions', async () => {
    // fetch, not t.api: the refusal comes before any route, documented or not.
    for (const path of ['/me', '/health/live', '/no-such-route']) {
      const res = await fetch(t.api.baseUrl + path, { headers: { 'Api-Version': '2026-11-15' } });
      expect(res.status, path).toBe(400);
      expect(await res.json()).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        message: `Api-Version header "2026-11-15" is not a version of this API; versions: ${CONTRACT}, 2026-11-26, ${NEWEST}`,
      });
      expect(res.headers.get('api-version')).toBe(CONTRACT);
      expect(res.headers.get('x-request-id')).toBeTruthy();
    }
  });

  it('stamps the pin of an org it has not cached yet, awaiting its read', async () => {
    const w = await t.seed.world('owner');
    const { key } = await mintOk(t, w.session, { org_id: w.orgId });
    await t.db.pool.query(`UPDATE orgs SET api_version = $2 WHERE id = $1`, [w.orgId, NEWEST]);
    await t.seed.acknowledged();
    const reads = vi.spyOn(t.app.get(OrgVersionRepository), 'pinOf');
    try {
      expect((await t.api.get('/me', key)).headers.get('api-version')).toBe(NEWEST);
      expect(reads).toHaveBeenCalledWith(w.orgId);
    } finally {
      reads.mockRestore();
    }
  });

  it('keeps the answer when the pin cannot be read: the default version, never a 500', async () => {
    const w = await t.seed.world('owner');
    const { key } = await mintOk(t, w.session, { org_id: w.orgId });
    await t.db.pool.query(`UPDATE orgs SET api_version = $2 WHERE id = $1`, [w.orgId, NEWEST]);
    await t.seed.acknowledged();
    const reads = vi.spyOn(t.app.get(OrgVersionRepository), 'pinOf').mockRejectedValue(new Error('database down'));
    try {
      const res = await t.api.get('/me', key);
      expect(res.status).toBe(200);
      expect(res.headers.get('api-version')).toBe(CONTRACT);
    } finally {
      reads.mockRestore();
    }
  });

  it('converts only successful answers of a touched route: its errors keep their body', async () => {
    const w = await t.seed.world('owner');
    const res = await t.api.get('/api-keys?limit=0', w.session, { 'Api-Version': CONTRACT });
    expect(res.status).toBe(400);
    expect(Object.keys(res.body)).toEqual(['statusCode', 'error', 'message']);
  });
});
