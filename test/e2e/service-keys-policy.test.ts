import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../support/clock.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { expect400, READ, WRITE } from './api-keys.fixtures.js';

/**
 * Service keys minted and rotated the one way personal keys are: the org's key policy judges
 * them as it judges the minting admin's own keys, and they take the per-key settings.
 */
describe('service keys under the org key policy, with the per-key settings', () => {
  let t: TestApp;
  const clock = new TestClock('2033-05-01T09:00:00.000Z');

  beforeAll(async () => {
    t = await startTestApp({ clock });
  });
  afterAll(async () => t?.close());

  const path = (orgId: string, rest = '') => `/orgs/${orgId}/service-keys${rest}`;
  const mint = (session: string, orgId: string, body: unknown = {}) => t.api.post(path(orgId), session, body);
  const setPolicy = async (session: string, orgId: string, body: unknown) => {
    const res = await t.api.request('PUT', `/orgs/${orgId}/key-policy`, { token: session, body });
    expect(res.status, res.text).toBe(200);
  };
  const serviceKeyCount = async (orgId: string) =>
    Number(
      (
        await t.db.pool.query(
          `SELECT count(*) FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.org_id = $1 AND u.kind = 'service'`,
          [orgId],
        )
      ).rows[0].count,
    );
  const serviceAccounts = async (orgId: string) =>
    (await t.db.pool.query(`SELECT 1 FROM users WHERE email = $1`, [`svc-${orgId}@service-accounts.invalid`])).rows
      .length;

  async function team() {
    const owner = await t.seed.world('owner');
    const admin = await t.seed.colleague(owner.orgId, 'admin');
    return { orgId: owner.orgId, owner, admin };
  }

  it('refuses a mint without an expiry under require_expiry (400 naming the policy), writing nothing, not even the service account', async () => {
    const w = await team();
    await setPolicy(w.owner.session, w.orgId, { require_expiry: true });
    expect400(await mint(w.admin.session, w.orgId, { name: 'forever' }), /require_expiry/);
    expect400(await mint(w.admin.session, w.orgId, { expires_in_days: 0 }), /require_expiry/);
    expect(await serviceKeyCount(w.orgId)).toBe(0);
    expect(await serviceAccounts(w.orgId)).toBe(0);
    expect((await mint(w.admin.session, w.orgId, { expires_in_days: 7 })).status).toBe(201);
  });

  it('refuses a mint over max_lifetime_days, or without an expiry, as a personal key of the same admin is refused', async () => {
    const w = await team();
    await setPolicy(w.owner.session, w.orgId, { max_lifetime_days: 30 });
    for (const body of [{ expires_in_days: 31 }, {}]) {
      const service = await mint(w.admin.session, w.orgId, body);
      const personal = await t.api.post('/api-keys', w.admin.session, { org_id: w.orgId, ...body });
      expect400(service, /max_lifetime_days/, /at most 30 days/);
      expect(service.body).toEqual(personal.body);
    }
    expect(await serviceKeyCount(w.orgId)).toBe(0);
    const within = await mint(w.admin.session, w.orgId, { expires_in_days: 30 });
    expect(within.status, within.text).toBe(201);
    expect(within.body.expires_at).toBe('2033-05-31T09:00:00.000Z');
  });

  it("refuses scopes outside allowed_scopes_by_role for the minting admin's role (403 as for a personal key); an owner keeps the ceiling", async () => {
    const w = await team();
    await setPolicy(w.owner.session, w.orgId, { allowed_scopes_by_role: { admin: [READ] } });
    const service = await mint(w.admin.session, w.orgId, { scopes: [READ, WRITE] });
    const personal = await t.api.post('/api-keys', w.admin.session, { org_id: w.orgId, scopes: [READ, WRITE] });
    expect(service.status).toBe(403);
    expect(service.body.message).toMatch(/allowed_scopes_by_role/);
    expect(service.body).toEqual(personal.body);
    expect(await serviceKeyCount(w.orgId)).toBe(0);
    expect((await mint(w.admin.session, w.orgId, { scopes: [READ] })).status).toBe(201);
    expect((await mint(w.owner.session, w.orgId, { scopes: [READ, WRITE] })).status).toBe(201);
  });

  it('never holds a service key for approval: owners and admins mint it, and their keys never wait', async () => {
    const w = await team();
    await setPolicy(w.owner.session, w.orgId, { approval_required_for: [WRITE] });
    const res = await mint(w.admin.session, w.orgId, { scopes: [WRITE] });
    expect(res.status, res.text).toBe(201);
    expect(res.body).not.toHaveProperty('status');
    expect((await t.api.get('/me', res.body.key)).status).toBe(200);
  });

  it('refuses to rotate a service key without an expiry once require_expiry is set (400 naming the policy), leaving its secret', async () => {
    const w = await team();
    const forever = (await mint(w.admin.session, w.orgId, { name: 'forever' })).body;
    const expiring = (await mint(w.admin.session, w.orgId, { name: 'expiring', expires_in_days: 10 })).body;
    await setPolicy(w.owner.session, w.orgId, { require_expiry: true });
    expect400(await t.api.post(path(w.orgId, `/${forever.id}/rotate`), w.owner.session, {}), /key policy/);
    expect((await t.api.get('/me', forever.key)).status).toBe(200);
    const audit = (await t.seed.auditEvents(w.orgId)).map((e) => e.action);
    expect(audit).not.toContain('service_key.rotated');
    expect((await t.api.post(path(w.orgId, `/${expiring.id}/rotate`), w.owner.session, {})).status).toBe(201);
  });

  it('stores, returns and enforces the settings given at mint (credits 2: the third request is 429; networks; disabled)', async () => {
    const w = await team();
    const settings = {
      rate_limits: [{ name: 'default', limit: 1000, window_seconds: 60 }],
      credits: { remaining: 2 },
      allowed_cidrs: ['127.0.0.0/8', '::1/128'],
      metadata: { pipeline: 'deploys' },
    };
    const res = await mint(w.admin.session, w.orgId, { name: 'ci', ...settings });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ name: 'ci', ...settings, owner: { type: 'org' }, created_by: w.admin.userId });
    const listed = (await t.api.get(path(w.orgId), w.owner.session)).body.keys;
    expect(listed).toEqual([expect.objectContaining({ id: res.body.id, ...settings })]);
    const { rows } = await t.db.pool.query(
      `SELECT credits_remaining::int AS credits, allowed_cidrs, metadata FROM api_keys WHERE id = $1`,
      [res.body.id],
    );
    expect(rows).toEqual([{ credits: 2, allowed_cidrs: settings.allowed_cidrs, metadata: settings.metadata }]);

    expect((await t.api.get('/me', res.body.key)).status).toBe(200);
    expect((await t.api.get('/me', res.body.key)).status).toBe(200);
    const spent = await t.api.get('/me', res.body.key);
    expect(spent.status).toBe(429);
    expect(spent.body.message).toContain('credits');

    const elsewhere = await mint(w.admin.session, w.orgId, { allowed_cidrs: ['203.0.113.0/24'] });
    expect((await t.api.get('/me', elsewhere.body.key)).status).toBe(403);
    const disabled = await mint(w.admin.session, w.orgId, { enabled: false });
    expect(disabled.body.enabled).toBe(false);
    expect((await t.api.get('/me', disabled.body.key)).status).toBe(401);
  });

  it('refuses bad settings with a 400 naming the field, writing nothing', async () => {
    const w = await team();
    expect400(
      await mint(w.admin.session, w.orgId, { credits: { remaining: 1, refill: { amount: 2 } } }),
      'credits.refill.interval',
    );
    expect400(
      await mint(w.admin.session, w.orgId, { rate_limits: [{ name: 'default', limit: 0, window_seconds: 1 }] }),
      'rate_limits[0].limit',
    );
    expect400(await mint(w.admin.session, w.orgId, { enabled: 'no' }), /enabled must be a boolean/);
    expect(await serviceKeyCount(w.orgId)).toBe(0);
  });

  it('documents the settings on the service-key mint body and record in OpenAPI', async () => {
    const doc = (await t.api.get('/openapi.json')).body;
    const body = doc.components.schemas.MintServiceKeyRequest;
    for (const field of ['enabled', 'rate_limits', 'credits', 'allowed_cidrs', 'metadata'])
      expect(Object.keys(body.properties)).toContain(field);
    expect(Object.keys(body.properties)).not.toContain('org_id');
    const record = Object.keys(doc.components.schemas.ServiceKey.properties);
    for (const field of ['enabled', 'rate_limits', 'credits', 'allowed_cidrs', 'metadata', 'owner', 'created_by'])
      expect(record).toContain(field);
  });
});
