import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';

describe('the service on real PostgreSQL', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it('answers 401 with WWW-Authenticate: Bearer when no credential is sent', async () => {
    const res = await t.api.get('/me');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(res.body).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
  });

  it('lets a session mint a key that then proves itself on /me, and refuses that key on a lifecycle route', async () => {
    const w = await t.seed.world('owner');
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'ci' });
    expect(minted.status).toBe(201);
    expect(minted.body.key).toMatch(/^svc_live_/);

    const me = await t.api.get('/me', minted.body.key);
    expect(me.status).toBe(200);
    expect(me.body).toEqual({
      user_id: w.userId,
      org_id: w.orgId,
      email: w.email,
      scopes: ['decisions:read'],
      org_role: 'owner',
      org_member_count: 1,
    });

    const list = await t.api.get('/api-keys', minted.body.key);
    expect(list.status).toBe(403);
  });
});
