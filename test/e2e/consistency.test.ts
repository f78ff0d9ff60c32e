import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiKeyVerificationStore } from '../../src/api-keys/api-key-verification.store.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * Two instances of the service on one database, as behind a load balancer. Neither may answer
 * from what it saw before: a change made anywhere is seen by the other on its next request.
 */
describe('two instances on one database', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await startTestApp();
    b = await startTestApp({ db: a.db });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  async function mintThroughA(scopes: string[] = ['decisions:read']) {
    const w = await a.seed.world('owner');
    const minted = await a.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'consistency', scopes });
    expect(minted.status).toBe(201);
    return { ...w, key: minted.body.key as string, keyId: minted.body.id as string };
  }

  /** Several accepted requests first, so anything an instance might remember is in place. */
  async function provenOnB(key: string) {
    for (let i = 0; i < 3; i++) {
      const me = await b.api.get('/me', key);
      expect(me.status).toBe(200);
    }
    expect((await b.api.get('/usage', key)).status).toBe(200);
  }

  it('refuses on instance B, on its very next request, a key revoked through instance A', async () => {
    const w = await mintThroughA();
    await provenOnB(w.key);

    const revoked = await a.api.delete(`/api-keys/${w.keyId}`, w.session);
    expect(revoked.status).toBe(204);

    const me = await b.api.get('/me', w.key);
    expect(me.status).toBe(401);
    expect(me.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect((await b.api.get('/usage', w.key)).status).toBe(401);
    expect((await a.api.get('/me', w.key)).status).toBe(401);
  });

  it('shrinks a key’s scopes on instance B at once when its owner’s role is lowered', async () => {
    const w = await mintThroughA(['decisions:read', 'decisions:write']);
    await provenOnB(w.key);
    expect((await b.api.get('/me', w.key)).body).toMatchObject({
      org_role: 'owner',
      scopes: ['decisions:read', 'decisions:write'],
    });

    await a.seed.member(w.orgId, w.userId, 'viewer');

    const me = await b.api.get('/me', w.key);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ org_role: 'viewer', scopes: ['decisions:read'] });
    // The session of the same user follows the same role.
    expect((await b.api.get('/me', w.session)).body).toMatchObject({ org_role: 'viewer', scopes: ['decisions:read'] });
  });

  it('refuses on instance B, on its very next request, the key of a member removed from the org', async () => {
    const w = await mintThroughA();
    await provenOnB(w.key);

    expect((await b.api.get('/me', w.session, { 'x-org-id': w.orgId })).body.org_id).toBe(w.orgId);

    await a.seed.removeMember(w.orgId, w.userId);

    expect((await b.api.get('/me', w.key)).status).toBe(401);
    expect((await b.api.get('/usage', w.key)).status).toBe(401);
    // The same user's session no longer reaches the org either.
    expect((await b.api.get('/me', w.session, { 'x-org-id': w.orgId })).status).toBe(404);
    expect((await b.api.get('/me', w.session)).body).toMatchObject({ org_id: null, org_role: null, scopes: [] });
  });

  it('counts a member added elsewhere in org_member_count on the next request', async () => {
    const w = await mintThroughA();
    expect((await b.api.get('/me', w.key)).body.org_member_count).toBe(1);

    const other = await a.seed.user();
    await a.seed.member(w.orgId, other.id, 'member');

    expect((await b.api.get('/me', w.key)).body.org_member_count).toBe(2);
  });
});

describe('a database failure during key verification', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });
  afterAll(async () => t?.close());

  it('answers 503 to the requests of the failed batch without internals, and the next request is served', async () => {
    const w = await t.seed.world('owner');
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'outage' });
    expect(minted.status).toBe(201);
    const key: string = minted.body.key;
    const repository = t.app.get(ApiKeyVerificationStore, { strict: false });
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const spy = vi.spyOn(repository, 'findForVerification').mockRejectedValueOnce(refused);

    const failed = await t.api.get('/me', key);
    expect(failed.status).toBe(503);
    expect(failed.body).toEqual({ statusCode: 503, error: 'Service Unavailable', message: expect.any(String) });
    expect(failed.text).not.toContain('ECONNREFUSED');
    expect(failed.text).not.toContain(key);

    const next = await t.api.get('/me', key);
    expect(next.status).toBe(200);
    expect(next.body.user_id).toBe(w.userId);
    expect(spy).toHaveBeenCalledTimes(2);
  });
});
