import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** A key's `description`: set at mint or by PATCH, returned on its record, cleared with null. */
describe('a key description', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  const patch = (session: string, path: string, body: unknown) =>
    t.api.request('PATCH', path, { token: session, body });

  it('is taken at mint, shown on the records, changed and cleared by PATCH', async () => {
    const w = await t.seed.world('owner');
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId, description: 'deploys from CI' });
    expect(minted.status, minted.text).toBe(201);
    expect(minted.body.description).toBe('deploys from CI');
    const listed = await t.api.get('/api-keys', w.session);
    expect(listed.body.keys[0].description).toBe('deploys from CI');

    const changed = await patch(w.session, `/api-keys/${minted.body.id}`, { description: 'x'.repeat(500) });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.description).toBe('x'.repeat(500));
    const byAdmin = await patch(w.session, `/orgs/${w.orgId}/api-keys/${minted.body.id}`, { description: 'ops' });
    expect(byAdmin.body.description).toBe('ops');
    const org = await t.api.get(`/orgs/${w.orgId}/api-keys`, w.session);
    expect(org.body.keys[0].description).toBe('ops');

    const cleared = await patch(w.session, `/api-keys/${minted.body.id}`, { description: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body).not.toHaveProperty('description');
    const plain = await t.api.post('/api-keys', w.session, { org_id: w.orgId });
    expect(plain.body).not.toHaveProperty('description');
  });

  it('refuses a description over 500 characters or not a string with a 400 naming it, writing nothing', async () => {
    const w = await t.seed.world('owner');
    const long = await t.api.post('/api-keys', w.session, { org_id: w.orgId, description: 'x'.repeat(501) });
    expect(long.status).toBe(400);
    expect(long.body.message).toBe('description must be at most 500 characters');
    expect((await t.api.get('/api-keys', w.session)).body.keys).toEqual([]);
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId, description: 'kept' });
    const wrong = await patch(w.session, `/api-keys/${minted.body.id}`, { description: 7 });
    expect(wrong.status).toBe(400);
    expect(wrong.body.message).toBe('description must be a string');
    expect((await t.api.get('/api-keys', w.session)).body.keys[0].description).toBe('kept');
  });
});
