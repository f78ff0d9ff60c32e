import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { WEBHOOK_TEST_ENV, WebhookReceiver, type ReceivedWebhook } from '../support/webhook-receiver.js';

const NOWHERE = '00000000-0000-4000-8000-000000000000';
const DAY_MS = 86_400_000;

/** Whether `secret` verifies a received message (the reference library accepts any one matching signature in the header). */
function verifiesWith(secret: string, message: ReceivedWebhook): boolean {
  try {
    new Webhook(secret).verify(message.body, message.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

describe('POST /orgs/{org_id}/webhooks/{id}/rotate-secret', () => {
  let t: TestApp;
  let url: string;
  const receiver = new WebhookReceiver();
  beforeAll(async () => {
    url = await receiver.start();
    t = await startTestApp({ env: WEBHOOK_TEST_ENV });
  });
  afterAll(async () => {
    await t?.close();
    await receiver.stop();
  });

  const rotate = (session: string, orgId: string, id: string, body?: unknown) =>
    t.api.request('POST', `/orgs/${orgId}/webhooks/${id}/rotate-secret`, {
      token: session,
      ...(body === undefined ? {} : { body }),
    });

  async function testEvent(session: string, orgId: string, id: string): Promise<ReceivedWebhook> {
    const sent = await t.api.post(`/orgs/${orgId}/webhooks/${id}/test`, session, {});
    expect(sent.status).toBe(202);
    await receiver.until((all) => all.some((r) => r.headers['webhook-id'] === sent.body.event_id));
    return receiver.received.find((r) => r.headers['webhook-id'] === sent.body.event_id)!;
  }

  it('returns a new secret once; during the overlap both sign, after it only the new one, and the old one is then cleared', async () => {
    const w = await t.seed.world('owner');
    const created = (
      await t.api.post(`/orgs/${w.orgId}/webhooks`, w.session, { url, event_types: ['api_key.created'] })
    ).body;

    const rotated = await rotate(w.session, w.orgId, created.id);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(rotated.body.secret).not.toBe(created.secret);
    expect(Math.abs(Date.parse(rotated.body.previous_secret_expires_at) - (Date.now() + DAY_MS))).toBeLessThan(10_000);
    const got = await t.api.get(`/orgs/${w.orgId}/webhooks/${created.id}`, w.session);
    expect(got.body).not.toHaveProperty('secret');
    expect(got.body.previous_secret_expires_at).toBe(rotated.body.previous_secret_expires_at);

    // Both sealed, neither in clear.
    const { rows } = await t.db.pool.query(
      `SELECT secret_box, previous_secret_box FROM webhook_endpoints WHERE id = $1`,
      [created.id],
    );
    for (const secret of [created.secret, rotated.body.secret]) {
      expect(Buffer.concat([rows[0].secret_box, rows[0].previous_secret_box]).toString('latin1')).not.toContain(
        secret.slice(6),
      );
    }

    const during = await testEvent(w.session, w.orgId, created.id);
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifiesWith(created.secret, during)).toBe(true);
    expect(verifiesWith(rotated.body.secret, during)).toBe(true);

    // The overlap ends (as a day later).
    await t.db.pool.query(
      `UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`,
      [created.id],
    );
    const after = await testEvent(w.session, w.orgId, created.id);
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifiesWith(rotated.body.secret, after)).toBe(true);
    expect(verifiesWith(created.secret, after)).toBe(false);

    await t.app.get(WebhookDispatcher).prune(new Date());
    const cleared = await t.db.pool.query(
      `SELECT previous_secret_box, previous_secret_expires_at FROM webhook_endpoints WHERE id = $1`,
      [created.id],
    );
    expect(cleared.rows[0]).toEqual({ previous_secret_box: null, previous_secret_expires_at: null });
    expect((await t.api.get(`/orgs/${w.orgId}/webhooks/${created.id}`, w.session)).body).not.toHaveProperty(
      'previous_secret_expires_at',
    );
  });

  it('with overlap_seconds 0 the old secret stops signing at once; a second rotation during an overlap drops the older secret', async () => {
    const w = await t.seed.world('admin');
    const created = (
      await t.api.post(`/orgs/${w.orgId}/webhooks`, w.session, { url, event_types: ['api_key.created'] })
    ).body;
    const first = (await rotate(w.session, w.orgId, created.id, { overlap_seconds: 600 })).body;
    const second = await rotate(w.session, w.orgId, created.id, { overlap_seconds: 0 });
    expect(second.status).toBe(200);
    expect(second.body).not.toHaveProperty('previous_secret_expires_at');
    const message = await testEvent(w.session, w.orgId, created.id);
    expect(verifiesWith(second.body.secret, message)).toBe(true);
    expect(verifiesWith(first.secret, message)).toBe(false);
    expect(verifiesWith(created.secret, message)).toBe(false);

    const third = (await rotate(w.session, w.orgId, created.id, { overlap_seconds: 600 })).body;
    const fourth = (await rotate(w.session, w.orgId, created.id, {})).body;
    const latest = await testEvent(w.session, w.orgId, created.id);
    expect(verifiesWith(fourth.secret, latest)).toBe(true);
    expect(verifiesWith(third.secret, latest)).toBe(true);
    expect(verifiesWith(second.body.secret, latest)).toBe(false);
  });

  it('is audited without the secret', async () => {
    const w = await t.seed.world('owner');
    const created = (
      await t.api.post(`/orgs/${w.orgId}/webhooks`, w.session, { url, event_types: ['api_key.created'] })
    ).body;
    const rotated = (await rotate(w.session, w.orgId, created.id, { overlap_seconds: 3600 })).body;
    const audit = await t.api.get(`/orgs/${w.orgId}/audit-events?action=webhook.secret_rotated`, w.session);
    expect(audit.body.events).toEqual([
      expect.objectContaining({
        actor: expect.objectContaining({ type: 'user', id: w.userId }),
        target: { type: 'webhook', id: created.id },
        details: { overlap_seconds: 3600 },
      }),
    ]);
    expect(audit.text).not.toContain(rotated.secret.slice(6));
  });

  it.each([
    [{ overlap_seconds: -1 }],
    [{ overlap_seconds: 604_801 }],
    [{ overlap_seconds: 1.5 }],
    [{ overlap_seconds: '60' }],
    [{ overlap_seconds: null }],
  ])('refuses %j with 400 naming the field and its bounds, changing nothing', async (body) => {
    const w = await t.seed.world('owner');
    const created = (
      await t.api.post(`/orgs/${w.orgId}/webhooks`, w.session, { url, event_types: ['api_key.created'] })
    ).body;
    const res = await rotate(w.session, w.orgId, created.id, body);
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('overlap_seconds must be an integer from 0 to 604800');
    const { rows } = await t.db.pool.query(`SELECT previous_secret_box FROM webhook_endpoints WHERE id = $1`, [
      created.id,
    ]);
    expect(rows[0].previous_secret_box).toBeNull();
  });

  it('refuses an unknown field with 400', async () => {
    const w = await t.seed.world('owner');
    const created = (
      await t.api.post(`/orgs/${w.orgId}/webhooks`, w.session, { url, event_types: ['api_key.created'] })
    ).body;
    const res = await rotate(w.session, w.orgId, created.id, { grace_period_seconds: 10 });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('grace_period_seconds is not an accepted field');
  });

  it('follows the other webhook routes: members and viewers 403, API keys 403, another org and unknown ids 404', async () => {
    const w = await t.seed.world('owner');
    const created = (
      await t.api.post(`/orgs/${w.orgId}/webhooks`, w.session, { url, event_types: ['api_key.created'] })
    ).body;
    for (const role of ['member', 'viewer'] as const) {
      const m = await t.seed.colleague(w.orgId, role);
      expect((await rotate(m.session, w.orgId, created.id)).status).toBe(403);
    }
    const key = (await t.api.post('/api-keys', w.session, { org_id: w.orgId })).body.key;
    expect((await rotate(key, w.orgId, created.id)).status).toBe(403);
    expect((await rotate(undefined as unknown as string, w.orgId, created.id)).status).toBe(401);

    const other = await t.seed.world('owner');
    expect((await rotate(other.session, w.orgId, created.id)).status).toBe(404);
    expect((await rotate(other.session, other.orgId, created.id)).status).toBe(404);
    expect((await rotate(w.session, w.orgId, NOWHERE)).status).toBe(404);
    expect((await rotate(w.session, w.orgId, 'not-a-uuid')).status).toBe(400);
    const { rows } = await t.db.pool.query(`SELECT previous_secret_box FROM webhook_endpoints WHERE id = $1`, [
      created.id,
    ]);
    expect(rows[0].previous_secret_box).toBeNull();
  });
});
