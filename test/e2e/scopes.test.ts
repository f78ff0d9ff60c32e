import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.js';
import { startTestApp, testConfig, type TestApp } from '../support/test-app.js';
import { WEBHOOK_TEST_ENV, WebhookReceiver } from '../support/webhook-receiver.js';

const READ = 'decisions:read';
const WRITE = 'decisions:write';

/** The deployment's own scopes, as the standalone server reads them from API_KEY_SCOPES. */
const REGISTRY = {
  'invoices:read': { description: 'Read invoices', roles: ['owner', 'admin', 'member', 'viewer'] },
  'invoices:write': { description: 'Create and change invoices', roles: ['owner', 'admin'] },
};

/**
 * A standalone deployment with API_KEY_SCOPES, on two instances sharing one PostgreSQL: the
 * registry in every place that knows scopes, scope usage counted across the instances, and
 * narrowing applied everywhere before its answer.
 */
describe('scopes the deployment defines (API_KEY_SCOPES), on two instances', () => {
  let a: TestApp;
  let b: TestApp;
  const receiver = new WebhookReceiver();
  let hookUrl: string;

  beforeAll(async () => {
    hookUrl = await receiver.start();
    const env = { ...WEBHOOK_TEST_ENV, API_KEY_SCOPES: JSON.stringify(REGISTRY) };
    a = await startTestApp({ env });
    b = await startTestApp({ db: a.db, env });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await receiver.stop();
  });

  async function mint(role: 'owner' | 'admin' | 'member' | 'viewer', scopes: string[]) {
    const w = await a.seed.world(role);
    const res = await a.api.post('/api-keys', w.session, { org_id: w.orgId, scopes });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return { ...w, key: res.body.key as string, keyId: res.body.id as string, record: res.body };
  }
  const patch = (t: TestApp, session: string, path: string, body: unknown) =>
    t.api.request('PATCH', path, { token: session, body });

  it('lists the registry on GET /scopes, for a session or a key, with what the caller’s role may grant', async () => {
    const w = await a.seed.world('member');
    const res = await a.api.get('/scopes', w.session);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      scopes: [
        { scope: READ, description: expect.any(String), grantable: true },
        { scope: WRITE, description: expect.any(String), grantable: true },
        { scope: 'invoices:read', description: 'Read invoices', grantable: true },
        { scope: 'invoices:write', description: 'Create and change invoices', grantable: false },
      ],
    });
    const viewer = await mint('viewer', ['invoices:read']);
    const byKey = await b.api.get('/scopes', viewer.key);
    expect(byKey.status).toBe(200);
    expect(byKey.body.scopes.map((s: { grantable: boolean }) => s.grantable)).toEqual([true, false, true, false]);
    expect((await a.api.get('/scopes')).status).toBe(401);
  });

  it('mints registered scopes up to the role, refuses an unregistered one (400 naming it) and one above the role (403)', async () => {
    const member = await mint('member', ['invoices:read', READ, 'invoices:read']);
    expect(member.record.scopes).toEqual([READ, 'invoices:read']);
    expect((await b.api.get('/me', member.key)).body.scopes).toEqual([READ, 'invoices:read']);
    const unknown = await a.api.post('/api-keys', member.session, {
      org_id: member.orgId,
      scopes: ['invoices:delete'],
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toMatch(/scopes may only contain registered scopes .*"invoices:delete"/);
    const above = await a.api.post('/api-keys', member.session, { org_id: member.orgId, scopes: ['invoices:write'] });
    expect(above.status).toBe(403);
    expect(above.body.message).toContain('invoices:write');
    const admin = await mint('admin', ['invoices:write']);
    expect(admin.record.scopes).toEqual(['invoices:write']);
  });

  it('cuts a demoted owner’s key down to the new role’s ceiling at once, on every instance', async () => {
    const w = await mint('admin', [READ, 'invoices:write']);
    for (const t of [a, b]) expect((await t.api.get('/me', w.key)).body.scopes).toEqual([READ, 'invoices:write']);
    await a.seed.member(w.orgId, w.userId, 'member');
    for (const t of [a, b]) expect((await t.api.get('/me', w.key)).body.scopes).toEqual([READ]);
  });

  it('gives service keys and the key policy the registry too', async () => {
    const w = await a.seed.world('owner');
    const svc = await a.api.post(`/orgs/${w.orgId}/service-keys`, w.session, {
      name: 'svc',
      scopes: ['invoices:write'],
    });
    expect(svc.status).toBe(201);
    expect(svc.body.scopes).toEqual(['invoices:write']);
    const bad = await a.api.post(`/orgs/${w.orgId}/service-keys`, w.session, { name: 'x', scopes: ['nope:nope'] });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain('"nope:nope"');
    const policy = (body: unknown) => a.api.request('PUT', `/orgs/${w.orgId}/key-policy`, { token: w.session, body });
    expect((await policy({ allowed_scopes_by_role: { member: ['invoices:read'] } })).status).toBe(200);
    const above = await policy({ allowed_scopes_by_role: { member: ['invoices:write'] } });
    expect(above.status).toBe(400);
    expect(above.body.message).toContain('invoices:write');
    const unknown = await policy({ approval_required_for: ['invoices:delete'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toMatch(/approval_required_for may only contain registered scopes/);
  });

  it("puts the running registry's scopes into the OpenAPI document's enums", async () => {
    const doc = (await a.api.get('/openapi.json')).body;
    const mint = doc.components.schemas.MintApiKeyRequest.properties.scopes;
    expect(mint.items.enum).toEqual([READ, WRITE, 'invoices:read', 'invoices:write']);
    expect(doc.components.schemas.ScopeDescription.properties.scope.enum).toContain('invoices:write');
  });

  it('counts the scopes a key’s requests needed, on both instances, and says which it did not use', async () => {
    const w = await mint('owner', [READ, 'invoices:read']);
    for (let i = 0; i < 3; i++) expect((await a.api.get('/usage', w.key)).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await b.api.get('/usage/daily', w.key)).status).toBe(200);
    expect((await b.api.get('/me', w.key)).status).toBe(200); // no scope required: not counted
    await expect
      .poll(async () => (await a.api.get(`/api-keys/${w.keyId}/scope-usage`, w.session)).body, { timeout: 10_000 })
      .toMatchObject({
        days: 30,
        scopes: [
          { scope: READ, requests: 5, last_used_at: expect.any(String) },
          { scope: 'invoices:read', requests: 0 },
        ],
        unused: ['invoices:read'],
      });
    const inOrg = await b.api.get(`/orgs/${w.orgId}/api-keys/${w.keyId}/scope-usage?days=1`, w.session);
    expect(inOrg.status).toBe(200);
    expect(inOrg.body).toMatchObject({ days: 1, unused: ['invoices:read'] });
  });

  it('refuses bad days (400), another user’s key (404), a member on the org route (403) and an API key (403)', async () => {
    const w = await mint('owner', [READ]);
    for (const days of ['0', '91', '1.5', 'x', '-1', '']) {
      const res = await a.api.get(`/api-keys/${w.keyId}/scope-usage?days=${days}`, w.session);
      expect(res.status, days).toBe(400);
      expect(res.body.message).toContain('days must be an integer from 1 to 90');
    }
    const other = await a.seed.world('owner');
    expect((await a.api.get(`/api-keys/${w.keyId}/scope-usage`, other.session)).status).toBe(404);
    expect((await a.api.get(`/orgs/${other.orgId}/api-keys/${w.keyId}/scope-usage`, other.session)).status).toBe(404);
    const member = await a.seed.colleague(w.orgId, 'member');
    expect((await a.api.get(`/orgs/${w.orgId}/api-keys/${w.keyId}/scope-usage`, member.session)).status).toBe(403);
    expect((await a.api.get(`/api-keys/${w.keyId}/scope-usage`, w.key)).status).toBe(403);
  });

  it('narrows a key on every instance before PATCH answers, audited and emitted with the scopes before and after', async () => {
    const w = await mint('owner', [READ, WRITE, 'invoices:read']);
    const hook = await a.api.post(`/orgs/${w.orgId}/webhooks`, w.session, {
      url: hookUrl,
      event_types: ['api_key.scopes_narrowed'],
    });
    expect(hook.status).toBe(201);
    receiver.secret = hook.body.secret;
    // Warm both instances' caches with the key as it is.
    for (const t of [a, b]) expect((await t.api.get('/usage', w.key)).status).toBe(200);
    const narrowed = await patch(a, w.session, `/api-keys/${w.keyId}`, { scopes: ['invoices:read', 'invoices:read'] });
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.scopes).toEqual(['invoices:read']);
    // Refused on the other instance as soon as the answer is in.
    const refused = await b.api.get('/usage', w.key);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toContain(READ);
    expect((await b.api.get('/me', w.key)).body.scopes).toEqual(['invoices:read']);
    const audit = await a.db.pool.query(
      `SELECT details FROM audit_events WHERE action = 'api_key.scopes_narrowed' AND target_id = $1`,
      [w.keyId],
    );
    expect(audit.rows).toEqual([
      { details: expect.objectContaining({ before: [READ, WRITE, 'invoices:read'], after: ['invoices:read'] }) },
    ]);
    const [event] = await receiver.until((r) => r.some((e) => e.verified?.data.id === w.keyId));
    expect(event.verified!.type).toBe('api_key.scopes_narrowed');
    expect(event.verified!.data).toMatchObject({
      scopes: ['invoices:read'],
      scopes_before: [READ, WRITE, 'invoices:read'],
    });
  });

  it('never widens a key (403), refuses [] and an unregistered scope (400), and narrows through the org route', async () => {
    const w = await mint('owner', [READ, 'invoices:read']);
    const widen = await patch(a, w.session, `/api-keys/${w.keyId}`, { scopes: [READ, WRITE] });
    expect(widen.status).toBe(403);
    expect(widen.body.message).toMatch(/never widened; mint a new one.*decisions:write/);
    const empty = await patch(a, w.session, `/api-keys/${w.keyId}`, { scopes: [] });
    expect(empty.status).toBe(400);
    expect(empty.body.message).toMatch(/^scopes must name at least one scope/);
    const unknown = await patch(a, w.session, `/api-keys/${w.keyId}`, { scopes: ['invoices:delete'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toContain('"invoices:delete"');
    expect((await a.api.get('/me', w.key)).body.scopes).toEqual([READ, 'invoices:read']);
    const other = await a.seed.world('owner');
    expect((await patch(a, other.session, `/api-keys/${w.keyId}`, { scopes: [READ] })).status).toBe(404);
    const admin = await a.seed.colleague(w.orgId, 'admin');
    const byAdmin = await patch(b, admin.session, `/orgs/${w.orgId}/api-keys/${w.keyId}`, { scopes: [READ] });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body.scopes).toEqual([READ]);
    expect((await a.api.get('/me', w.key)).body.scopes).toEqual([READ]);
  });
});

describe('a scope that leaves the registry', () => {
  it('stops counting on the keys that hold it; they keep verifying with the registered rest', async () => {
    const db = await createTestDatabase();
    const first = await startTestApp({ db, env: { API_KEY_SCOPES: JSON.stringify(REGISTRY) } });
    let second: TestApp | undefined;
    try {
      const w = await first.seed.world('owner');
      const minted = await first.api.post('/api-keys', w.session, {
        org_id: w.orgId,
        scopes: [READ, 'invoices:write'],
      });
      expect(minted.status).toBe(201);
      await first.close();
      second = await startTestApp({ db });
      const me = await second.api.get('/me', minted.body.key);
      expect(me.status).toBe(200);
      expect(me.body.scopes).toEqual([READ]);
    } finally {
      await second?.close();
      await db.drop();
    }
  });

  it('stops the start with one line naming API_KEY_SCOPES and the entry when the registry is malformed', () => {
    const env = { API_KEY_SCOPES: JSON.stringify({ 'Invoices:Read': { description: 'x', roles: ['owner'] } }) };
    expect(() => testConfig('postgres://unused', env)).toThrow(
      /^Invalid configuration:\n {2}API_KEY_SCOPES: "Invoices:Read" is not a scope name[^\n]*$/,
    );
  });
});
