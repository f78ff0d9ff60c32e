import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { listKeys, mintOk } from './api-keys.fixtures.js';

/**
 * Who set a key's controls: the record's `controls_set_by`, and the 403 when the key's owner
 * lifts a control an org owner or admin set (PATCH /api-keys/{id} against PATCH /orgs/{org}/api-keys/{id}).
 */
describe('controls an org admin set', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  /** A member's key in an org with an admin: the member's session, the admin's, and the key. */
  async function memberKey(body: Record<string, unknown> = {}) {
    const owner = await t.seed.world('member');
    const admin = await t.seed.colleague(owner.orgId, 'admin');
    const minted = await mintOk(t, owner.session, { org_id: owner.orgId, name: 'partner', ...body });
    return { owner, admin, keyId: minted.id as string, key: minted.key as string };
  }
  const byOwner = (w: Awaited<ReturnType<typeof memberKey>>, body: unknown) =>
    t.api.request('PATCH', `/api-keys/${w.keyId}`, { token: w.owner.session, body });
  const byAdmin = (w: Awaited<ReturnType<typeof memberKey>>, body: unknown) =>
    t.api.request('PATCH', `/orgs/${w.owner.orgId}/api-keys/${w.keyId}`, { token: w.admin.session, body });
  /** The key as its owner's list and the org admins' list show it. */
  async function views(w: Awaited<ReturnType<typeof memberKey>>) {
    const own = (await listKeys(t, w.owner.session)).find((k) => k.id === w.keyId)!;
    const org = await t.api.get(`/orgs/${w.owner.orgId}/api-keys`, w.admin.session);
    expect(org.status).toBe(200);
    return { own, org: (org.body.keys as Array<Record<string, any>>).find((k) => k.id === w.keyId)! };
  }

  it('says who set each control on the record, in the owner’s and the admins’ views, and nothing for a key without controls', async () => {
    const plain = await memberKey();
    expect((await views(plain)).own).not.toHaveProperty('controls_set_by');
    const w = await memberKey({ metadata: { team: 'a' } });
    const set = await byAdmin(w, {
      rate_limits: [{ name: 'default', limit: 100, window_seconds: 1 }],
      credits: { remaining: 40 },
    });
    expect(set.status, set.text).toBe(200);
    const expected = { metadata: 'owner', rate_limits: 'admin', credits: 'admin' };
    expect(set.body.controls_set_by).toEqual(expected);
    const { own, org } = await views(w);
    expect(own.controls_set_by).toEqual(expected);
    expect(org.controls_set_by).toEqual(expected);
    const cleared = await byAdmin(w, { credits: null, metadata: null });
    expect(cleared.body.controls_set_by).toEqual({ rate_limits: 'admin' });
  });

  it('refuses the owner lifting each control an admin set with a 403 that names it, and changes nothing', async () => {
    const w = await memberKey();
    const set = await byAdmin(w, {
      rate_limits: [{ name: 'default', limit: 100, window_seconds: 1 }],
      credits: { remaining: 40 },
      allowed_cidrs: ['127.0.0.0/8', '::1/128'],
      metadata: { tier: 'gold' },
    });
    expect(set.status, set.text).toBe(200);
    const before = (await views(w)).own;
    const lifts: Array<[string, unknown]> = [
      ['rate_limits', { rate_limits: [{ name: 'default', limit: 1000, window_seconds: 1 }] }],
      ['rate_limits', { rate_limits: null }],
      ['credits', { credits: { remaining: 41 } }],
      ['credits', { credits: null }],
      ['allowed_cidrs', { allowed_cidrs: ['0.0.0.0/0', '::/0'] }],
      ['allowed_cidrs', { allowed_cidrs: null }],
      ['metadata', { metadata: { tier: 'platinum' } }],
    ];
    for (const [control, body] of lifts) {
      const res = await byOwner(w, { name: 'sneaky', ...(body as object) });
      expect(res.status, JSON.stringify(body)).toBe(403);
      expect(res.body).toMatchObject({ statusCode: 403, error: 'Forbidden' });
      expect(res.body.message).toMatch(
        new RegExp(`^${control} was set by an org admin, so this key's owner may only narrow it: `),
      );
    }
    // Who set a control is the service's to record, never the caller's to say.
    const claimed = await byOwner(w, { rate_limits: null, controls_set_by: { rate_limits: 'owner' } });
    expect(claimed.status).toBe(400);
    expect(claimed.body.message).toContain('controls_set_by');
    expect((await views(w)).own).toEqual(before);
  });

  it('lets the owner narrow an admin’s control, which stays the admin’s, and only an admin raises it again', async () => {
    const w = await memberKey();
    await byAdmin(w, {
      rate_limits: [{ name: 'default', limit: 100, window_seconds: 1 }],
      allowed_cidrs: ['127.0.0.0/8'],
    });
    const narrowed = await byOwner(w, {
      rate_limits: [
        { name: 'default', limit: 2, window_seconds: 1 },
        { name: 'daily', limit: 1000, window_seconds: 86400 },
      ],
      allowed_cidrs: ['127.0.0.1/32'],
    });
    expect(narrowed.status, narrowed.text).toBe(200);
    expect(narrowed.body.controls_set_by).toEqual({ rate_limits: 'admin', allowed_cidrs: 'admin' });
    const { own, org } = await views(w);
    for (const view of [own, org]) {
      expect(view.rate_limits[0]).toEqual({ name: 'default', limit: 2, window_seconds: 1 });
      expect(view.allowed_cidrs).toEqual(['127.0.0.1/32']);
      expect(view.controls_set_by).toEqual({ rate_limits: 'admin', allowed_cidrs: 'admin' });
    }
    // The narrower window holds: two a second, the third refused.
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push((await t.api.get('/me', w.key)).status);
    expect(answers.filter((s) => s === 200).length).toBeLessThanOrEqual(2);
    expect(answers).toContain(429);
    const back = await byOwner(w, { rate_limits: [{ name: 'default', limit: 100, window_seconds: 1 }] });
    expect(back.status).toBe(403);
    expect(back.body.message).toContain('rate_limits[0].limit may be at most 2');
    const lifted = await byAdmin(w, { rate_limits: null });
    expect(lifted.status).toBe(200);
    expect(lifted.body).not.toHaveProperty('rate_limits');
    expect(
      (await byOwner(w, { rate_limits: [{ name: 'default', limit: 500, window_seconds: 1 }] })).body.controls_set_by,
    ).toEqual({
      rate_limits: 'owner',
      allowed_cidrs: 'admin',
    });
  });

  it('refuses the owner re-enabling a key an admin disabled (it stays refused), and lets an admin', async () => {
    const w = await memberKey();
    const off = await byAdmin(w, { enabled: false });
    expect(off.body).toMatchObject({ enabled: false, controls_set_by: { enabled: 'admin' } });
    expect((await t.api.get('/me', w.key)).status).toBe(401);
    const refused = await byOwner(w, { enabled: true });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe(
      "enabled was set by an org admin, so this key's owner may only narrow it: a key an org admin disabled is enabled again only by an org owner or admin",
    );
    expect((await t.api.get('/me', w.key)).status).toBe(401);
    expect((await byOwner(w, { enabled: false })).status).toBe(200);
    const on = await byAdmin(w, { enabled: true });
    expect(on.status).toBe(200);
    expect(on.body).not.toHaveProperty('enabled');
    expect(on.body).not.toHaveProperty('controls_set_by');
    expect((await t.api.get('/me', w.key)).status).toBe(200);
    // A key its owner disabled, its owner enables again.
    expect((await byOwner(w, { enabled: false })).body.controls_set_by).toEqual({ enabled: 'owner' });
    expect((await byOwner(w, { enabled: true })).status).toBe(200);
  });

  it('records a service key’s controls as an admin’s', async () => {
    const owner = await t.seed.world('owner');
    const res = await t.api.post(`/orgs/${owner.orgId}/service-keys`, owner.session, {
      name: 'batch',
      credits: { remaining: 10 },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.controls_set_by).toEqual({ credits: 'admin' });
  });
});
