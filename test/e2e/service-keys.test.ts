import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyVerifier } from '../../src/auth/api-key-verifier.js';
import { TestClock } from '../support/clock.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { WEBHOOK_TEST_ENV, WebhookReceiver } from '../support/webhook-receiver.js';
import {
  BEHIND_THE_RESPONSE,
  expect400,
  KEY_SHAPE,
  mintOk,
  NOWHERE,
  READ,
  RFC3339,
  UUID_SHAPE,
  WRITE,
} from './api-keys.fixtures.js';

const CAP = 3;

describe('service keys: POST/GET /orgs/{org_id}/service-keys, rotate and revoke', () => {
  let t: TestApp;
  const clock = new TestClock('2031-07-01T09:00:00.000Z');

  const receiver = new WebhookReceiver();
  let url: string;

  beforeAll(async () => {
    url = await receiver.start();
    t = await startTestApp({ clock, env: { ...WEBHOOK_TEST_ENV, MAX_ACTIVE_SERVICE_KEYS_PER_ORG: String(CAP) } });
  });
  afterAll(async () => {
    await t?.close();
    await receiver.stop();
  });

  const path = (orgId: string, rest = '') => `/orgs/${orgId}/service-keys${rest}`;
  const mint = (session: string, orgId: string, body: unknown = {}) => t.api.post(path(orgId), session, body);
  const rows = async (sql: string, params: unknown[]) => (await t.db.pool.query(sql, params)).rows;
  const keyCount = async (orgId: string) =>
    Number((await rows(`SELECT count(*) FROM api_keys WHERE org_id = $1`, [orgId]))[0].count);

  /** An org with an owner, an admin, a member and a viewer. */
  async function team() {
    const owner = await t.seed.world('owner');
    const admin = await t.seed.colleague(owner.orgId, 'admin');
    const member = await t.seed.colleague(owner.orgId, 'member');
    const viewer = await t.seed.colleague(owner.orgId, 'viewer');
    return { orgId: owner.orgId, owner, admin, member, viewer };
  }

  async function mintServiceOk(session: string, orgId: string, body: Record<string, unknown> = {}) {
    const res = await mint(session, orgId, body);
    expect(res.status, res.text).toBe(201);
    return res.body as Record<string, any>;
  }

  it('mints for an owner or admin: the key once, owner { type: "org" }, created_by and the service account as holder; audited', async () => {
    const w = await team();
    const minted = await mintServiceOk(w.admin.session, w.orgId, {
      name: 'ci deploys',
      scopes: [WRITE, READ, READ],
      expires_in_days: 30,
    });
    expect(minted).toEqual({
      key: expect.stringMatching(KEY_SHAPE),
      id: expect.stringMatching(UUID_SHAPE),
      org_id: w.orgId,
      name: 'ci deploys',
      lookup: expect.any(String),
      last4: minted.key.slice(-4),
      scopes: [READ, WRITE],
      created_at: '2031-07-01T09:00:00.000Z',
      expires_at: '2031-07-31T09:00:00.000Z',
      owner: { type: 'org' },
      created_by: w.admin.userId,
      user_id: expect.stringMatching(UUID_SHAPE),
    });
    expect(minted.user_id).not.toBe(w.admin.userId);
    clock.advance(1000);
    const byOwner = await mintServiceOk(w.owner.session, w.orgId);
    expect(byOwner).toMatchObject({ scopes: [READ], created_by: w.owner.userId, user_id: minted.user_id });

    const audit = (await t.seed.auditEvents(w.orgId)).filter((e) => e.action === 'service_key.minted');
    expect(audit.map((e) => [e.actor_id, e.target_id])).toEqual([
      [w.admin.userId, minted.id],
      [w.owner.userId, byOwner.id],
    ]);
  });

  it('verifies as the service account: /me keeps every contract field a valid string, the org\'s people exclude it, and host code sees kind "service"', async () => {
    const w = await team();
    const minted = await mintServiceOk(w.owner.session, w.orgId, { scopes: [READ, WRITE] });
    const me = await t.api.get('/me', minted.key);
    expect(me.status, me.text).toBe(200);
    expect(me.body).toEqual({
      user_id: minted.user_id,
      org_id: w.orgId,
      email: `svc-${w.orgId}@service-accounts.invalid`,
      scopes: [READ, WRITE],
      org_role: 'owner',
      org_member_count: 4,
    });
    expect((await t.api.get('/usage', minted.key)).status).toBe(200);
    // A person's view of the same org counts the same four people, and its members list shows no service account.
    expect((await t.api.get('/me', w.member.session)).body.org_member_count).toBe(4);
    const members = await t.api.get(`/orgs/${w.orgId}/members`, w.owner.session);
    expect(members.body.members.map((m: any) => m.id)).not.toContain(minted.user_id);
    const personal = await mintOk(t, w.member.session, { org_id: w.orgId });
    expect((await t.api.get('/me', personal.key)).body.org_member_count).toBe(4);

    const principal = await t.app.get(ApiKeyVerifier).verify(minted.key);
    expect(principal).toMatchObject({ kind: 'service', keyId: minted.id, userId: minted.user_id });
    expect(await t.app.get(ApiKeyVerifier).verify(personal.key)).toMatchObject({ kind: 'api_key' });
  });

  it('keeps verifying after the admin who minted it is removed from the org, and stays theirs in the record', async () => {
    const w = await team();
    const minted = await mintServiceOk(w.admin.session, w.orgId);
    const personal = await mintOk(t, w.admin.session, { org_id: w.orgId });
    await t.seed.removeMember(w.orgId, w.admin.userId);
    expect((await t.api.get('/me', personal.key)).status).toBe(401);
    const me = await t.api.get('/me', minted.key);
    expect(me.status).toBe(200);
    expect(me.body.org_member_count).toBe(3);
    // last_used_at is written just behind the response, so the list is read until it shows.
    await expect
      .poll(async () => (await t.api.get(path(w.orgId), w.owner.session)).body.keys, BEHIND_THE_RESPONSE)
      .toEqual([{ ...withoutKey(minted), state: 'active', last_used_at: expect.stringMatching(RFC3339) }]);
  });

  it('refuses a session for the service account (401 with WWW-Authenticate), on every kind of route', async () => {
    const w = await team();
    const minted = await mintServiceOk(w.owner.session, w.orgId);
    const forged = t.seed.session(minted.user_id, `svc-${w.orgId}@service-accounts.invalid`);
    const named = t.seed.session(minted.user_id, 'x@example.com', { orgId: w.orgId });
    for (const res of [
      await t.api.get('/me', forged),
      await t.api.get('/me', named),
      await t.api.get('/api-keys', forged),
      await t.api.delete(`/api-keys/${minted.id}`, forged),
      await t.api.post(`/api-keys/${minted.id}/rotate`, forged, {}),
      await t.api.get(`/orgs/${w.orgId}/api-keys`, named),
      await t.api.get(path(w.orgId), forged),
    ]) {
      expect(res.status, res.text).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token"/);
    }
    expect((await t.api.get('/me', minted.key)).status).toBe(200);
  });

  it("lists the org's service keys for owners and admins, newest first, and shows them in the org key list as the org's", async () => {
    const w = await team();
    const a = await mintServiceOk(w.owner.session, w.orgId, { name: 'a' });
    clock.advance(1000);
    const b = await mintServiceOk(w.admin.session, w.orgId, { name: 'b' });
    clock.advance(1000);
    const personal = await mintOk(t, w.member.session, { org_id: w.orgId, name: 'p' });
    for (const reader of [w.owner, w.admin]) {
      const res = await t.api.get(path(w.orgId), reader.session);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        keys: [
          { ...withoutKey(b), state: 'active' },
          { ...withoutKey(a), state: 'active' },
        ],
      });
    }
    const page = await t.api.get(path(w.orgId, '?limit=1'), w.owner.session);
    expect(page.body.keys.map((k: any) => k.name)).toEqual(['b']);
    const rest = await t.api.get(path(w.orgId, `?limit=1&cursor=${page.body.next_cursor}`), w.owner.session);
    expect(rest.body.keys.map((k: any) => k.name)).toEqual(['a']);

    const org = await t.api.get(`/orgs/${w.orgId}/api-keys`, w.owner.session);
    expect(org.body.keys.map((k: any) => k.name)).toEqual(['p', 'b', 'a']);
    expect(org.body.keys[1]).toMatchObject({
      id: b.id,
      owner: { type: 'org' },
      created_by: w.admin.userId,
      user_id: b.user_id,
      owner_status: 'member',
    });
    // A personal key's records keep exactly their shape.
    expect(org.body.keys[0]).not.toHaveProperty('owner');
    expect(org.body.keys[0]).not.toHaveProperty('created_by');
    expect(Object.keys(personal).sort()).toEqual([
      'created_at',
      'id',
      'key',
      'last4',
      'lookup',
      'name',
      'org_id',
      'scopes',
    ]);
    expect((await t.api.get('/api-keys', w.owner.session)).body.keys).toEqual([]);
  });

  it('rotates for any owner or admin: the new secret once, the old one during the grace; audited', async () => {
    const w = await team();
    const minted = await mintServiceOk(w.admin.session, w.orgId, { name: 'rotating' });
    const res = await t.api.post(path(w.orgId, `/${minted.id}/rotate`), w.owner.session, { grace_period_seconds: 60 });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      id: minted.id,
      name: 'rotating',
      created_by: w.admin.userId,
      owner: { type: 'org' },
      key: expect.stringMatching(KEY_SHAPE),
    });
    expect(res.body.previous_secret_expires_at).toMatch(RFC3339);
    expect((await t.api.get('/me', res.body.key)).status).toBe(200);
    expect((await t.api.get('/me', minted.key)).status).toBe(200);
    clock.advance(61_000);
    expect((await t.api.get('/me', minted.key)).status).toBe(401);
    expect((await t.seed.auditEvents(w.orgId)).map((e) => e.action)).toContain('service_key.rotated');
  });

  it('revokes for any owner or admin: it stops verifying at once; again is 204; audited', async () => {
    const w = await team();
    const minted = await mintServiceOk(w.owner.session, w.orgId);
    expect((await t.api.delete(path(w.orgId, `/${minted.id}`), w.admin.session)).status).toBe(204);
    expect((await t.api.get('/me', minted.key)).status).toBe(401);
    expect((await t.api.delete(path(w.orgId, `/${minted.id}`), w.owner.session)).status).toBe(204);
    expect((await t.api.post(path(w.orgId, `/${minted.id}/rotate`), w.owner.session, {})).status).toBe(409);
    const listed = (await t.api.get(path(w.orgId, '?state=revoked'), w.owner.session)).body.keys;
    expect(listed).toEqual([
      expect.objectContaining({ id: minted.id, state: 'revoked', revoked_at: expect.stringMatching(RFC3339) }),
    ]);
    expect(
      (await t.seed.auditEvents(w.orgId)).filter((e) => e.action === 'service_key.revoked').map((e) => e.actor_id),
    ).toEqual([w.admin.userId]);
  });

  it("answers 404 alike for a personal key, another org's service key and a missing one, and leaves them untouched", async () => {
    const w = await team();
    const other = await t.seed.world('owner');
    const foreign = await mintServiceOk(other.session, other.orgId);
    const personal = await mintOk(t, w.member.session, { org_id: w.orgId });
    await mintServiceOk(w.owner.session, w.orgId);
    for (const id of [personal.id, foreign.id, NOWHERE]) {
      expect((await t.api.delete(path(w.orgId, `/${id}`), w.owner.session)).status).toBe(404);
      expect((await t.api.post(path(w.orgId, `/${id}/rotate`), w.owner.session, {})).status).toBe(404);
    }
    expect((await t.api.get('/me', personal.key)).status).toBe(200);
    expect((await t.api.get('/me', foreign.key)).status).toBe(200);
    expect((await mint(other.session, w.orgId)).status).toBe(404);
    expect((await mint(w.owner.session, NOWHERE)).status).toBe(404);
  });

  it('refuses members and viewers (403) and API keys (403), writing nothing', async () => {
    const w = await team();
    const personal = await mintOk(t, w.owner.session, { org_id: w.orgId });
    const before = await keyCount(w.orgId);
    for (const who of [w.member, w.viewer]) {
      expect((await mint(who.session, w.orgId)).status).toBe(403);
      expect((await t.api.get(path(w.orgId), who.session)).status).toBe(403);
    }
    expect((await mint(personal.key, w.orgId)).status).toBe(403);
    expect((await t.api.get(path(w.orgId), personal.key)).status).toBe(403);
    expect(await keyCount(w.orgId)).toBe(before);
    expect(await rows(`SELECT 1 FROM users WHERE email = $1`, [`svc-${w.orgId}@service-accounts.invalid`])).toEqual([]);
  });

  it('announces mint, rotation and revocation as service_key.created, service_key.rotated and service_key.revoked, never with the key', async () => {
    const w = await team();
    const hook = await t.api.post(`/orgs/${w.orgId}/webhooks`, w.owner.session, {
      url,
      event_types: ['service_key.created', 'service_key.rotated', 'service_key.revoked'],
    });
    expect(hook.status, hook.text).toBe(201);
    receiver.secret = hook.body.secret;
    const minted = await mintServiceOk(w.admin.session, w.orgId, { name: 'announced' });
    const rotated = (await t.api.post(path(w.orgId, `/${minted.id}/rotate`), w.owner.session, {})).body;
    expect((await t.api.delete(path(w.orgId, `/${minted.id}`), w.owner.session)).status).toBe(204);
    const forOrg = () => receiver.received.filter((r) => r.verified?.data.org_id === w.orgId);
    await receiver.until(() => forOrg().length === 3);
    const byType = Object.fromEntries(forOrg().map((r) => [r.verified!.type, r.verified!.data]));
    expect(byType['service_key.created']).toMatchObject({
      id: minted.id,
      name: 'announced',
      owner: { type: 'org' },
      created_by: w.admin.userId,
      user_id: minted.user_id,
    });
    expect(byType['service_key.rotated']).toMatchObject({
      id: minted.id,
      rotated_by: w.owner.userId,
      previous_lookup: minted.lookup,
    });
    expect(byType['service_key.revoked']).toMatchObject({ id: minted.id, revoked_by: w.owner.userId });
    const bodies = forOrg()
      .map((r) => r.body)
      .join('\n');
    expect(bodies).not.toContain(minted.key);
    expect(bodies).not.toContain(rotated.key);
  });

  it.each([
    [{ org_id: NOWHERE }, /org_id is not an accepted field/],
    [{ scopes: ['decisions:admin'] }, /scopes may only contain/],
    [{ expires_in_days: 367 }, /expires_in_days must be an integer from 0 to 366/],
    [{ name: 'x'.repeat(101) }, /name/],
    [{ name: null }, /name must be a string/],
  ])('refuses %j with a 400 naming the field, writing nothing', async (body, message) => {
    const w = await t.seed.world('owner');
    expect400(await mint(w.session, w.orgId, body), message);
    expect(await keyCount(w.orgId)).toBe(0);
  });

  it('refuses a path org_id or keyID that is not a UUID (400)', async () => {
    const w = await t.seed.world('owner');
    expect400(await mint(w.session, 'nope'), /org_id must be a UUID/);
    expect400(await t.api.delete(path(w.orgId, '/nope'), w.session), /keyID must be a UUID/);
  });

  it(`holds the org to MAX_ACTIVE_SERVICE_KEYS_PER_ORG (${CAP}) active service keys, apart from its people's own keys`, async () => {
    const w = await team();
    const minted = [];
    for (let i = 0; i < CAP; i++) minted.push(await mintServiceOk(i % 2 ? w.admin.session : w.owner.session, w.orgId));
    const refused = await mint(w.owner.session, w.orgId);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toMatch(/MAX_ACTIVE_SERVICE_KEYS_PER_ORG/);
    expect(await keyCount(w.orgId)).toBe(CAP);
    await mintOk(t, w.owner.session, { org_id: w.orgId });
    expect((await t.api.delete(path(w.orgId, `/${minted[0].id}`), w.owner.session)).status).toBe(204);
    await mintServiceOk(w.owner.session, w.orgId);
  });
});

function withoutKey(minted: Record<string, any>): Record<string, any> {
  const { key: _key, ...record } = minted;
  return record;
}
