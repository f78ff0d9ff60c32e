import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../support/clock.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { expect400, KEY_SHAPE, listKeys, mintOk, NOWHERE, READ, WRITE } from './api-keys.fixtures.js';

const DAY_MS = 86_400_000;

describe('POST /api-keys/{keyID}/rotate: rotation with a grace period', () => {
  let t: TestApp;
  const clock = new TestClock('2031-09-01T12:00:00.000Z');

  beforeAll(async () => {
    t = await startTestApp({ clock });
  });
  afterAll(async () => t?.close());

  const rotate = (session: string, keyId: string, body?: unknown) =>
    body === undefined
      ? t.api.request('POST', `/api-keys/${keyId}/rotate`, { token: session })
      : t.api.post(`/api-keys/${keyId}/rotate`, session, body);
  const me = async (key: string) => (await t.api.get('/me', key)).status;

  it('answers 201 with the same key (id, name, org, scopes, expiry) under a new secret shown once', async () => {
    const w = await t.seed.world('owner');
    const old = await mintOk(t, w.session, { org_id: w.orgId, name: 'ci', scopes: [READ, WRITE], expires_in_days: 30 });
    clock.advance(1000);
    const res = await rotate(w.session, old.id, { grace_period_seconds: 3600 });
    expect(res.status, res.text).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const rotated = res.body;
    expect(rotated.key).toMatch(KEY_SHAPE);
    expect(rotated.key).not.toBe(old.key);
    expect(rotated).toEqual({
      key: rotated.key,
      id: old.id,
      org_id: w.orgId,
      name: 'ci',
      lookup: expect.any(String),
      last4: rotated.key.slice(-4),
      scopes: [READ, WRITE],
      created_at: old.created_at,
      expires_at: old.expires_at,
      previous_secret_expires_at: new Date(clock.now().getTime() + 3600_000).toISOString(),
    });
    expect(rotated.key).toContain(rotated.lookup);
    expect(rotated.lookup).not.toBe(old.lookup);
    const [listed] = await listKeys(t, w.session);
    const { key, ...record } = rotated;
    expect(listed).toEqual(record);
  });

  it('lets both secrets verify until the grace period ends, then only the new one', async () => {
    const w = await t.seed.world('member');
    const old = await mintOk(t, w.session, { org_id: w.orgId });
    const rotated = (await rotate(w.session, old.id, { grace_period_seconds: 600 })).body;
    expect(await me(old.key)).toBe(200);
    expect(await me(rotated.key)).toBe(200);
    expect((await t.api.get('/me', old.key)).body.user_id).toBe(w.userId);
    clock.advance(599_000);
    expect(await me(old.key)).toBe(200);
    clock.advance(1000); // the grace period's last instant has passed
    expect(await me(old.key)).toBe(401);
    clock.advance(1000); // and one second after it
    expect(await me(old.key)).toBe(401);
    expect(await me(rotated.key)).toBe(200);
    expect((await listKeys(t, w.session))[0]).not.toHaveProperty('previous_secret_expires_at');
  });

  it('defaults to a grace period of 86400 seconds (an empty body or {})', async () => {
    const w = await t.seed.world('owner');
    for (const body of [undefined, {}]) {
      const old = await mintOk(t, w.session, { org_id: w.orgId });
      const res = await rotate(w.session, old.id, body);
      expect(res.status, res.text).toBe(201);
      expect(res.body.previous_secret_expires_at).toBe(new Date(clock.now().getTime() + DAY_MS).toISOString());
    }
  });

  it('with grace_period_seconds 0 the old secret stops at once', async () => {
    const w = await t.seed.world('owner');
    const old = await mintOk(t, w.session, { org_id: w.orgId });
    const res = await rotate(w.session, old.id, { grace_period_seconds: 0 });
    expect(res.status).toBe(201);
    expect(res.body).not.toHaveProperty('previous_secret_expires_at');
    expect(await me(old.key)).toBe(401);
    expect(await me(res.body.key)).toBe(200);
  });

  it('rotating again during a grace period ends the older grace at once', async () => {
    const w = await t.seed.world('owner');
    const first = await mintOk(t, w.session, { org_id: w.orgId });
    const second = (await rotate(w.session, first.id, { grace_period_seconds: 3600 })).body;
    const third = (await rotate(w.session, first.id, { grace_period_seconds: 3600 })).body;
    expect(await me(first.key)).toBe(401);
    expect(await me(second.key)).toBe(200);
    expect(await me(third.key)).toBe(200);
  });

  it('revoking a key in its grace period stops both secrets at once', async () => {
    const w = await t.seed.world('owner');
    const old = await mintOk(t, w.session, { org_id: w.orgId });
    const rotated = (await rotate(w.session, old.id, { grace_period_seconds: 3600 })).body;
    expect((await t.api.delete(`/api-keys/${old.id}`, w.session)).status).toBe(204);
    expect(await me(old.key)).toBe(401);
    expect(await me(rotated.key)).toBe(401);
    expect((await listKeys(t, w.session))[0]).not.toHaveProperty('previous_secret_expires_at');
  });

  it('refuses to rotate a revoked or an expired key (409)', async () => {
    const w = await t.seed.world('owner');
    const revoked = await mintOk(t, w.session, { org_id: w.orgId });
    await t.api.delete(`/api-keys/${revoked.id}`, w.session);
    const expiring = await mintOk(t, w.session, { org_id: w.orgId, expires_in_days: 1 });
    clock.advance(DAY_MS);
    const a = await rotate(w.session, revoked.id, {});
    const b = await rotate(w.session, expiring.id, {});
    expect(a.status).toBe(409);
    expect(a.body.message).toMatch(/revoked/);
    expect(b.status).toBe(409);
    expect(b.body.message).toMatch(/expired/);
  });

  it("answers 404 alike for a missing key and someone else's (even an org admin's view of it)", async () => {
    const w = await t.seed.world('owner');
    const colleague = await t.seed.colleague(w.orgId, 'member');
    const theirs = await mintOk(t, colleague.session, { org_id: w.orgId });
    const foreign = await rotate(w.session, theirs.id, {});
    const missing = await rotate(w.session, NOWHERE, {});
    expect(foreign.status).toBe(404);
    expect(foreign.text).toBe(missing.text);
    expect(await me(theirs.key)).toBe(200);
  });

  it.each([
    [{ grace_period_seconds: -1 }, /grace_period_seconds must be an integer from 0 to 604800/],
    [{ grace_period_seconds: 604801 }, /grace_period_seconds must be an integer from 0 to 604800/],
    [{ grace_period_seconds: '60' }, /grace_period_seconds must be an integer/],
    [{ grace_period_seconds: 1.5 }, /grace_period_seconds must be an integer/],
    [{ grace_period_seconds: null }, /grace_period_seconds must be an integer/],
    [{ colour: 'red' }, /colour is not an accepted field/],
    [[], /must be a JSON object/],
  ])('refuses the body %j (400 naming the field and rule) and keeps the old secret', async (body, message) => {
    const w = await t.seed.world('owner');
    const old = await mintOk(t, w.session, { org_id: w.orgId });
    expect400(await rotate(w.session, old.id, body), message);
    expect((await listKeys(t, w.session))[0].lookup).toBe(old.lookup);
  });

  it('refuses a keyID that is not a UUID (400), an API key (403) and no credential (401)', async () => {
    const w = await t.seed.world('owner');
    const old = await mintOk(t, w.session, { org_id: w.orgId });
    expect400(await rotate(w.session, 'nope', {}), /keyID must be a UUID/);
    expect((await rotate(old.key, old.id, {})).status).toBe(403);
    expect((await t.api.post(`/api-keys/${old.id}/rotate`, undefined, {})).status).toBe(401);
    expect(await me(old.key)).toBe(200);
  });

  it('records the rotation in the audit log without either secret', async () => {
    const w = await t.seed.world('owner');
    const old = await mintOk(t, w.session, { org_id: w.orgId, name: 'deploy' });
    const rotated = (await rotate(w.session, old.id, { grace_period_seconds: 60 })).body;
    const events = (await t.api.get(`/orgs/${w.orgId}/audit-events?action=api_key.rotated`, w.session)).body.events;
    expect(events).toEqual([
      expect.objectContaining({
        actor: { type: 'user', id: w.userId },
        target: { type: 'api_key', id: old.id },
        details: {
          name: 'deploy',
          lookup: rotated.lookup,
          previous_lookup: old.lookup,
          grace_period_seconds: 60,
          previous_secret_expires_at: rotated.previous_secret_expires_at,
        },
      }),
    ]);
    const stored = JSON.stringify(await t.seed.auditEvents(w.orgId));
    for (const k of [old.key, rotated.key]) expect(stored).not.toContain(k.slice(-20));
  });

  it('under concurrent verification no request fails during the switch, and the old secret fails once the grace ends', async () => {
    const w = await t.seed.world('owner');
    const old = await mintOk(t, w.session, { org_id: w.orgId });
    let rotatedKey: string | null = null;
    let stop = false;
    const statuses: number[] = [];
    const hammer = async (useNew: boolean) => {
      while (!stop) {
        const key = useNew ? rotatedKey : old.key;
        if (key) statuses.push(await me(key));
        else await new Promise((r) => setImmediate(r));
      }
    };
    const workers = [...Array(6)].map((_, i) => hammer(i % 2 === 1));
    await new Promise((r) => setTimeout(r, 50));
    const res = await rotate(w.session, old.id, { grace_period_seconds: 30 });
    expect(res.status).toBe(201);
    rotatedKey = res.body.key;
    // Keep verifying both for a while after the switch.
    const before = statuses.length;
    while (statuses.length < before + 60) await new Promise((r) => setTimeout(r, 5));
    stop = true;
    await Promise.all(workers);
    expect(statuses.length).toBeGreaterThan(60);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);

    clock.advance(31_000); // one second past the grace period
    expect(await me(old.key)).toBe(401);
    expect(await me(rotatedKey!)).toBe(200);
  });
});

describe('POST /api-keys/{keyID}/rotate when API keys are not configured', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { API_KEY_SECRET: '' } });
  });
  afterAll(async () => t?.close());

  it('answers 501 after authentication', async () => {
    const w = await t.seed.world('owner');
    const res = await t.api.post(`/api-keys/${NOWHERE}/rotate`, w.session, {});
    expect(res.status).toBe(501);
    expect((await t.api.get(`/orgs/${w.orgId}/api-keys`, w.session)).status).toBe(501);
    expect((await t.api.post(`/api-keys/${NOWHERE}/rotate`, undefined, {})).status).toBe(401);
  });
});
