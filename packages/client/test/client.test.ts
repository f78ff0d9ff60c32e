import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VerificationOutcomeRecorder } from '../../../src/auth/verification-outcome-recorder.js';
import { startWebhookApp, WebhookReceiver } from '../../../test/support/webhook-receiver.js';
import type { TestApp } from '../../../test/support/test-app.js';
import {
  ApiError,
  KeysUsageIdentityClient,
  LATEST_API_VERSION,
  type ApiKey,
  type KeyControlsSetBy,
  type VerificationOutcomeCounts,
} from '../src/index.js';

/**
 * Every method of the typed client against the running service (real app on a loopback port,
 * real PostgreSQL, the events worker delivering to a loopback receiver).
 */
describe('the typed client against the running service', () => {
  let t: TestApp;
  let url: string;
  let close: () => Promise<void>;
  const receiver = new WebhookReceiver();
  let owner: { orgId: string; userId: string; session: string };
  /** The owner's browser session. */
  let session: KeysUsageIdentityClient;
  /** Every request the session client sent, as the service saw its headers. */
  const sent: Request[] = [];

  beforeAll(async () => {
    ({ t, url, close } = await startWebhookApp(receiver));
    owner = await t.seed.world('owner');
    session = new KeysUsageIdentityClient({
      baseUrl: t.url,
      credential: owner.session,
      fetch: (request) => {
        sent.push(request.clone());
        return fetch(request);
      },
    });
  });
  afterAll(async () => close?.());

  it('was generated from the document the running service serves', async () => {
    const served = await (await fetch(`${t.url}/openapi.json`)).json();
    expect(JSON.parse(readFileSync(join(import.meta.dirname, '../openapi.json'), 'utf8'))).toEqual(served);
  });

  it('sends Api-Version (the newest version it knows, unless told), the credential and its headers on every request, raw calls included', async () => {
    await session.me();
    const last = sent.at(-1)!;
    expect(last.headers.get('Api-Version')).toBe(LATEST_API_VERSION);
    expect(LATEST_API_VERSION).toMatch(/^\d{4}-\d\d-\d\d$/);
    expect(last.headers.get('Authorization')).toBe(`Bearer ${owner.session}`);

    let asked = 0;
    const pinned = new KeysUsageIdentityClient({
      baseUrl: t.url,
      apiVersion: '2026-11-01',
      credential: () => (asked++, owner.session),
      headers: { 'User-Agent': 'client-test/1' },
      fetch: (request) => (sent.push(request.clone()), fetch(request)),
    });
    expect((await pinned.me()).user_id).toBe(owner.userId);
    expect(sent.at(-1)!.headers.get('Api-Version')).toBe('2026-11-01');
    expect(sent.at(-1)!.headers.get('User-Agent')).toBe('client-test/1');
    expect(asked).toBe(1);

    // `raw`: the typed openapi-fetch client underneath, for any route of the document.
    const { data, error, response } = await pinned.raw.GET('/orgs/{org_id}/members', {
      params: { path: { org_id: owner.orgId } },
    });
    expect(response.status).toBe(200);
    expect(error).toBeUndefined();
    expect(data?.members.map((m) => m.user_id)).toContain(owner.userId);
    expect(asked).toBe(2);
  });

  it('keys: mints, lists page by page, rotates, reports usage and revokes', async () => {
    const minted = await session.keys.mint({ org_id: owner.orgId, name: 'ci', scopes: ['decisions:read'] });
    expect(minted.key).toMatch(/^svc_live_/);
    const others = await Promise.all([1, 2].map((n) => session.keys.mint({ org_id: owner.orgId, name: `k${n}` })));

    const first = await session.keys.list({ limit: 2 });
    expect(first.keys).toHaveLength(2);
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await session.keys.list({ limit: 2, cursor: first.next_cursor! });
    expect([...first.keys, ...second.keys].map((k) => k.id).sort()).toEqual(
      [minted.id, ...others.map((k) => k.id)].sort(),
    );
    const all: ApiKey[] = [];
    for await (const key of session.keys.listAll({ limit: 1 })) all.push(key);
    expect(all.map((k) => k.id).sort()).toEqual([minted.id, ...others.map((k) => k.id)].sort());
    // Nothing of the secret in a listed key.
    expect(JSON.stringify(all)).not.toContain(minted.key.slice(-8));

    const rotated = await session.keys.rotate(minted.id, { grace_period_seconds: 0 });
    expect(rotated.id).toBe(minted.id);
    expect(rotated.key).not.toBe(minted.key);
    const withNewKey = new KeysUsageIdentityClient({ baseUrl: t.url, credential: rotated.key });
    expect((await withNewKey.me()).user_id).toBe(owner.userId);

    const usage = await session.keys.usage(minted.id);
    expect(usage).toMatchObject({ key_id: minted.id, org_id: owner.orgId, days: expect.any(Array) });

    await session.keys.revoke(minted.id);
    expect((await session.keys.list({ state: 'revoked' })).keys.map((k) => k.id)).toEqual([minted.id]);
    const refused = await withNewKey.me().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 401, body: { statusCode: 401, error: 'Unauthorized' } });
    for (const key of others) await session.keys.revoke(key.id);
  });

  it('scopes: lists the deployment’s scopes (strings), reports a key’s scope usage and narrows it', async () => {
    const listed = await session.scopes({ orgId: owner.orgId });
    expect(listed.scopes.map((s) => s.scope)).toEqual(['decisions:read', 'decisions:write']);
    expect(listed.scopes.every((s) => s.grantable)).toBe(true);
    const scope: string = listed.scopes[0].scope;
    const minted = await session.keys.mint({ org_id: owner.orgId, scopes: [scope, 'decisions:write'] });
    const report = await session.keys.scopeUsage(minted.id, { days: 7 });
    expect(report).toEqual({
      days: 7,
      scopes: [
        { scope: 'decisions:read', requests: 0 },
        { scope: 'decisions:write', requests: 0 },
      ],
      unused: ['decisions:read', 'decisions:write'],
    });
    const narrowed = await session.keys.update(minted.id, { scopes: ['decisions:read'] });
    expect(narrowed.scopes).toEqual(['decisions:read']);
    const widened = await session.keys.update(minted.id, { scopes: ['decisions:write'] }).catch((e: unknown) => e);
    expect(widened).toMatchObject({ status: 403 });
    await session.keys.revoke(minted.id);
  });

  it('usage and identity, with an API key and with a session naming its org', async () => {
    const { key } = await session.keys.mint({ org_id: owner.orgId, scopes: ['decisions:read'] });
    const withKey = new KeysUsageIdentityClient({ baseUrl: t.url, credential: key });
    expect(await withKey.me()).toMatchObject({
      user_id: owner.userId,
      org_id: owner.orgId,
      org_role: 'owner',
      scopes: ['decisions:read'],
    });
    const usage = await withKey.usage.get();
    expect(usage).toMatchObject({ plan: 'free', mcp_queries: { used: 0 }, resets_at: expect.any(String) });
    const today = new Date().toISOString().slice(0, 10);
    const daily = await withKey.usage.daily({ from: today, to: today });
    expect(daily).toMatchObject({ from: today, to: today, days: [expect.objectContaining({ day: today })] });

    expect((await session.me({ orgId: owner.orgId })).org_id).toBe(owner.orgId);
    expect((await session.usage.get({ orgId: owner.orgId })).plan).toBe('free');
    expect((await session.usage.daily({ orgId: owner.orgId })).days.length).toBeGreaterThan(0);
  });

  it('verifications: what the requests with a key were decided, for its owner, for the org’s admins and summed over the org', async () => {
    const minted = await session.keys.mint({ org_id: owner.orgId, name: 'outcomes', scopes: ['decisions:read'] });
    const withKey = new KeysUsageIdentityClient({ baseUrl: t.url, credential: minted.key });
    await withKey.me();
    await withKey.usage.get();
    await session.keys.update(minted.id, { enabled: false });
    await expect(withKey.me()).rejects.toMatchObject({ status: 401 });
    // Counted as each request was decided; written now rather than at the recorder's next tick.
    await t.app.get(VerificationOutcomeRecorder).drain();

    const today = new Date().toISOString().slice(0, 10);
    const outcomes: VerificationOutcomeCounts = {
      valid: 2,
      revoked: 0,
      expired: 0,
      disabled: 1,
      pending: 0,
      ip_refused: 0,
      rate_limited: 0,
      credits_exhausted: 0,
      usage_exceeded: 0,
      insufficient_scope: 0,
    };
    expect(await session.keys.verifications(minted.id, { from: today, to: today })).toEqual({
      granularity: 'day',
      from: today,
      to: today,
      buckets: [{ start: `${today}T00:00:00.000Z`, outcomes }],
    });
    const hourly = await session.orgs.keyVerifications(owner.orgId, minted.id, { granularity: 'hour', from: today });
    expect(hourly).toMatchObject({ granularity: 'hour', from: today, to: today });
    expect(hourly.buckets.reduce((sum, b) => sum + b.outcomes.valid + b.outcomes.disabled, 0)).toBe(3);
    // The org's summary holds this key's refusal (the only disabled key) beside every other key's requests.
    const org = await session.orgs.verifications(owner.orgId, { from: today });
    expect(org.buckets.at(-1)!.outcomes).toMatchObject({ disabled: 1 });
    expect(org.buckets.at(-1)!.outcomes.valid).toBeGreaterThanOrEqual(2);
    await expect(session.keys.verifications(minted.id, { granularity: 'week' as 'day' })).rejects.toMatchObject({
      status: 400,
      body: { message: expect.stringMatching(/granularity/) },
    });
  });

  it("orgs: lists the caller's orgs, members, org keys, a key's usage and scope usage, narrows, limits (the member cannot lift it) and revokes a member's key and reads the audit log", async () => {
    const colleague = await t.seed.colleague(owner.orgId, 'member');
    const theirClient = new KeysUsageIdentityClient({ baseUrl: t.url, credential: colleague.session });
    const theirs = await theirClient.keys.mint({
      org_id: owner.orgId,
      name: 'theirs',
      scopes: ['decisions:read', 'decisions:write'],
    });

    expect((await session.orgs.list()).orgs).toEqual([expect.objectContaining({ id: owner.orgId, role: 'owner' })]);
    const members = await session.orgs.members(owner.orgId, { limit: 1 });
    expect(members.members).toHaveLength(1);
    const rest = await session.orgs.members(owner.orgId, { cursor: members.next_cursor! });
    expect([...members.members, ...rest.members].map((m) => m.user_id).sort()).toEqual(
      [owner.userId, colleague.userId].sort(),
    );

    const keys = await session.orgs.keys(owner.orgId, { user_id: colleague.userId });
    expect(keys.keys).toEqual([expect.objectContaining({ id: theirs.id, user_id: colleague.userId, state: 'active' })]);
    expect(await session.orgs.keyUsage(owner.orgId, theirs.id)).toMatchObject({
      key_id: theirs.id,
      org_id: owner.orgId,
    });
    expect(await session.orgs.keyScopeUsage(owner.orgId, theirs.id, { days: 7 })).toMatchObject({
      days: 7,
      unused: ['decisions:read', 'decisions:write'],
    });
    const narrowed = await session.orgs.updateKey(owner.orgId, theirs.id, { scopes: ['decisions:read'] });
    expect(narrowed.scopes).toEqual(['decisions:read']);
    const limited = await session.orgs.updateKey(owner.orgId, theirs.id, {
      rate_limits: [{ name: 'default', limit: 10, window_seconds: 1 }],
    });
    const setBy: KeyControlsSetBy | undefined = limited.controls_set_by;
    expect(setBy).toEqual({ rate_limits: 'admin' });
    const lifted = await theirClient.keys.update(theirs.id, { rate_limits: null }).catch((e: unknown) => e);
    expect(lifted).toBeInstanceOf(ApiError);
    expect((lifted as ApiError).status).toBe(403);
    expect((lifted as ApiError).body?.message).toMatch(/^rate_limits was set by an org admin/);
    await session.orgs.revokeKey(owner.orgId, theirs.id);
    expect((await session.orgs.keys(owner.orgId, { user_id: colleague.userId })).keys[0].state).toBe('revoked');

    const audit = await session.orgs.auditEvents(owner.orgId, { target_id: theirs.id });
    expect(audit.events.map((e) => e.action)).toEqual([
      'api_key.revoked_by_admin',
      'api_key.updated',
      'api_key.scopes_narrowed',
      'api_key.minted',
    ]);
  });

  it('webhooks: creates, lists, reads, updates, rotates the secret, sends a test, lists and retries deliveries, deletes', async () => {
    const created = await session.webhooks.create(owner.orgId, {
      url,
      event_types: ['api_key.created'],
      description: 'from the client',
    });
    expect(created.secret).toMatch(/^whsec_/);
    expect((await session.webhooks.list(owner.orgId)).webhooks.map((w) => w.id)).toEqual([created.id]);
    expect(await session.webhooks.get(owner.orgId, created.id)).toMatchObject({ id: created.id, url, enabled: true });
    const updated = await session.webhooks.update(owner.orgId, created.id, {
      description: 'renamed',
      event_types: ['api_key.created', 'api_key.revoked'],
    });
    expect(updated).toMatchObject({ description: 'renamed', event_types: ['api_key.created', 'api_key.revoked'] });
    const rotated = await session.webhooks.rotateSecret(owner.orgId, created.id, { overlap_seconds: 0 });
    expect(rotated.secret).not.toBe(created.secret);
    receiver.secret = rotated.secret;

    const queued = await session.webhooks.test(owner.orgId, created.id);
    await receiver.until(() => receiver.ofType('webhook.test').length > 0);
    let deliveries;
    do deliveries = await session.webhooks.deliveries(owner.orgId, created.id, { limit: 10 });
    while (deliveries.deliveries.length === 0);
    expect(deliveries.deliveries[0]).toMatchObject({
      event_id: queued.event_id,
      event_type: 'webhook.test',
      status: 'succeeded',
    });

    const again = await session.webhooks.retryDelivery(owner.orgId, created.id, deliveries.deliveries[0].id);
    expect(again.event_id).toEqual(expect.any(String));
    await receiver.until(() => receiver.ofType('webhook.test').length > 1);

    await session.webhooks.delete(owner.orgId, created.id);
    await expect(session.webhooks.get(owner.orgId, created.id)).rejects.toMatchObject({ status: 404 });
  });

  it("throws an ApiError carrying the service's error body for a refusal (here a 400 naming the field)", async () => {
    const error = await session.keys.mint({ org_id: 'not-a-uuid' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(400);
    expect((error as ApiError).body?.message).toMatch(/org_id/);
    expect((error as ApiError).message).toMatch(/^400 Bad Request: .*org_id/);
  });
});
