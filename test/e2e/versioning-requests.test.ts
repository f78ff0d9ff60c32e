import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSIONS } from '../../src/versioning/api-versions.js';
import { VERSION_CHANGES, type VersionChange } from '../../src/versioning/version-changes.js';
import { VersioningPolicy } from '../../src/versioning/versioning-policy.js';
import { ApiClient } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const CONTRACT = '2026-11-01';
const PREVIOUS = '2026-11-26';
const NEWEST = '2027-01-15';

/**
 * A test-only version after the service's own: a key's `title` became `name` (request and answer
 * of POST /api-keys), and the list's `status` filter became `state`.
 */
const RENAMES: VersionChange = {
  version: NEWEST,
  description: 'A key is labelled `name` (was `title`); GET /api-keys filters by `state` (was `status`).',
  operations: {
    mintApiKey: {
      request: ({ body, query }) => {
        if (!body || typeof body !== 'object' || Array.isArray(body) || !('title' in body)) return { body, query };
        const { title, ...rest } = body as Record<string, unknown>;
        return { body: { ...rest, name: title }, query };
      },
      response: ({ name, ...rest }) => ({ ...rest, title: name }),
    },
    listApiKeys: {
      request: ({ body, query: { status, ...query } }) => ({
        body,
        query: status === undefined ? query : { ...query, state: status },
      }),
    },
  },
};

/** A version change's request transform, through the real app with a policy of the test's own. */
describe('request transforms of a version change', () => {
  let t: TestApp;
  // Unvalidated: the per-version OpenAPI documents describe only the service's own changes.
  let api: ApiClient;

  beforeAll(async () => {
    const policy = new VersioningPolicy(
      [...API_VERSIONS, { date: NEWEST, summary: 'Keys are labelled name.' }],
      [...VERSION_CHANGES, RENAMES],
      [],
    );
    t = await startTestApp({ versioning: policy });
    api = new ApiClient(t.url, { validate: false });
  });
  afterAll(async () => t?.close());

  it("brings an older request forward (the org's pin, no header) and answers in the older shape", async () => {
    const w = await t.seed.world('owner');
    const minted = await api.post('/api-keys', w.session, { org_id: w.orgId, title: 'deploy bot' });
    expect(minted.status, minted.text).toBe(201);
    expect(minted.headers.get('api-version')).toBe(CONTRACT);
    expect(minted.body.title).toBe('deploy bot');
    expect(minted.body).not.toHaveProperty('name');

    const listed = await api.get('/api-keys', w.session, { 'Api-Version': NEWEST });
    expect(listed.body.keys.map((k: { name: string }) => k.name)).toEqual(['deploy bot']);
    expect(listed.body.next_cursor).toBeNull();
  });

  it('validates the upgraded request in the newest shape: the 400 names the newest field', async () => {
    const w = await t.seed.world('owner');
    const res = await api.post('/api-keys', w.session, { org_id: w.orgId, title: 42 }, { 'Api-Version': PREVIOUS });
    expect(res.status).toBe(400);
    expect(res.body.message).toContain('name must be a string');
  });

  it('leaves a request of the newest version untouched: the older field is an unknown one there', async () => {
    const w = await t.seed.world('owner');
    const old = await api.post('/api-keys', w.session, { org_id: w.orgId, title: 'x' }, { 'Api-Version': NEWEST });
    expect(old.status).toBe(400);
    expect(old.body.message).toMatch(/title/);
    const res = await api.post('/api-keys', w.session, { org_id: w.orgId, name: 'x' }, { 'Api-Version': NEWEST });
    expect(res.status, res.text).toBe(201);
    expect(res.body.name).toBe('x');
    expect(res.body).not.toHaveProperty('title');
  });

  it('renames a query parameter for older requests only', async () => {
    const w = await t.seed.world('owner');
    const kept = await api.post('/api-keys', w.session, { org_id: w.orgId, name: 'kept' }, { 'Api-Version': NEWEST });
    const revoked = await api.post(
      '/api-keys',
      w.session,
      { org_id: w.orgId, name: 'revoked' },
      { 'Api-Version': NEWEST },
    );
    expect((await api.delete(`/api-keys/${revoked.body.id}`, w.session)).status).toBe(204);

    const older = await api.get('/api-keys?status=revoked', w.session, { 'Api-Version': PREVIOUS });
    expect(older.status, older.text).toBe(200);
    expect(older.body.keys.map((k: { id: string }) => k.id)).toEqual([revoked.body.id]);
    // 2026-11-26 answers carry next_cursor; the contract's drop a null one: both changes applied in order.
    expect(older.body.next_cursor).toBeNull();
    const contract = await api.get('/api-keys?status=revoked', w.session, { 'Api-Version': CONTRACT });
    expect(contract.body).toEqual({ keys: older.body.keys });

    // Unknown query parameters are ignored: in the newest version `status` filters nothing.
    const newest = await api.get('/api-keys?status=revoked', w.session, { 'Api-Version': NEWEST });
    expect(newest.body.keys.map((k: { id: string }) => k.id).sort()).toEqual([kept.body.id, revoked.body.id].sort());
  });

  it('refuses a bad value of the renamed parameter with the newest name', async () => {
    const w = await t.seed.world('owner');
    const res = await api.get('/api-keys?status=sideways', w.session, { 'Api-Version': PREVIOUS });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^state /);
  });
});

describe('the start-up check of the version table', () => {
  it('refuses to start when a change names an operation no handler declares @Versioned', async () => {
    const policy = new VersioningPolicy(
      [...API_VERSIONS, { date: NEWEST, summary: 'GET /me changed.' }],
      [...VERSION_CHANGES, { version: NEWEST, description: 'GET /me changed.', operations: { getMe: {} } }],
      [],
    );
    await expect(startTestApp({ versioning: policy })).rejects.toThrow(
      /Version changes name operations no handler declares with @Versioned: getMe/,
    );
  });
});
