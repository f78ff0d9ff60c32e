import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.js';
import { ApiClient } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { startWebhookApp, WEBHOOK_TEST_ENV, WebhookReceiver } from '../support/webhook-receiver.js';

/** Signed delivery from the transactional outbox, verified by a receiver with the Standard Webhooks library. */
describe('webhook delivery', () => {
  let t: TestApp;
  let url: string;
  let close: () => Promise<void>;
  const receiver = new WebhookReceiver();
  beforeAll(async () => ({ t, url, close } = await startWebhookApp(receiver)));
  afterAll(async () => close?.());

  async function webhook(session: string, orgId: string, types: string[], target = url) {
    const res = await t.api.post(`/orgs/${orgId}/webhooks`, session, {
      url: target,
      event_types: types,
      description: 'ops',
    });
    expect(res.status).toBe(201);
    return res.body as { id: string; secret: string };
  }

  it('delivers api_key.created and api_key.revoked, signed so the reference library verifies them, with no secret inside', async () => {
    const w = await t.seed.world('owner');
    const hook = await webhook(w.session, w.orgId, ['api_key.created', 'api_key.revoked']);
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    receiver.secret = hook.secret;

    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'ci' });
    expect(minted.status).toBe(201);
    const [created] = await receiver.until(() =>
      receiver.ofType('api_key.created').some((r) => r.verified!.data.id === minted.body.id),
    );
    const msg = receiver.ofType('api_key.created').find((r) => r.verified!.data.id === minted.body.id)!;
    expect(created).toBeDefined();
    expect(msg.headers['webhook-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(msg.headers['webhook-timestamp']).toMatch(/^\d+$/);
    expect(msg.headers['webhook-signature']).toMatch(/^v1,/);
    expect(msg.verified!.data).toMatchObject({
      id: minted.body.id,
      org_id: w.orgId,
      name: 'ci',
      lookup: minted.body.lookup,
      last4: minted.body.last4,
    });
    expect(msg.body).not.toContain(minted.body.key);
    expect(msg.body).not.toContain(minted.body.key.slice(22, 54)); // the secret part

    expect((await t.api.delete(`/api-keys/${minted.body.id}`, w.session)).status).toBe(204);
    await receiver.until(() => receiver.ofType('api_key.revoked').some((r) => r.verified!.data.id === minted.body.id));
    const revoked = receiver.ofType('api_key.revoked').find((r) => r.verified!.data.id === minted.body.id)!;
    // The revoke's statement builds this payload in SQL: the same fields, in the same formats, as the mint's.
    expect(revoked.verified!.data).toEqual({
      ...msg.verified!.data,
      revoked_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      revoked_by: w.userId,
    });
    // A second revoke changes nothing and emits nothing.
    expect((await t.api.delete(`/api-keys/${minted.body.id}`, w.session)).status).toBe(204);

    const deliveries = await t.api.get(`/orgs/${w.orgId}/webhooks/${hook.id}/deliveries`, w.session);
    expect(deliveries.status).toBe(200);
    expect(deliveries.body.deliveries.length).toBeGreaterThanOrEqual(2);
    expect(deliveries.body.deliveries[0]).toMatchObject({ status: 'succeeded', response_status: 200, attempt: 1 });
  });

  it('a tampered body does not verify (the receiver is not fooled)', async () => {
    const w = await t.seed.world('owner');
    const hook = await webhook(w.session, w.orgId, ['api_key.created']);
    receiver.secret = hook.secret;
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId });
    await receiver.until(() => receiver.ofType('api_key.created').some((r) => r.verified!.data.id === minted.body.id));
    const msg = receiver.ofType('api_key.created').find((r) => r.verified!.data.id === minted.body.id)!;
    const { Webhook } = await import('standardwebhooks');
    const headers = msg.headers as Record<string, string>;
    expect(() => new Webhook(hook.secret).verify(msg.body, headers)).not.toThrow();
    // Equivalent JSON, other bytes: the signature covers the exact body.
    expect(() => new Webhook(hook.secret).verify(msg.body.replace('{', '{ '), headers)).toThrow();
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(msg.body, headers)).toThrow();
  });

  it('only subscribed types reach an endpoint, and other orgs never see the event', async () => {
    const a = await t.seed.world('owner');
    const b = await t.seed.world('owner');
    receiver.secret = (await webhook(a.session, a.orgId, ['api_key.revoked'])).secret;
    await webhook(b.session, b.orgId, ['api_key.created']);
    const minted = await t.api.post('/api-keys', a.session, { org_id: a.orgId });
    await t.api.delete(`/api-keys/${minted.body.id}`, a.session);
    await receiver.until(() => receiver.ofType('api_key.revoked').some((r) => r.verified!.data.id === minted.body.id));
    expect(
      receiver.received.filter((r) => r.body.includes(minted.body.id) && r.verified?.type === 'api_key.created'),
    ).toEqual([]);
  });

  it('a rolled-back change sends nothing: a mint that fails writes no event', async () => {
    const w = await t.seed.world('owner');
    await webhook(w.session, w.orgId, ['api_key.created']);
    // Make the key insert fail inside the transaction, after the row would exist.
    await t.db.pool.query(`ALTER TABLE api_keys ADD CONSTRAINT no_rollback_name CHECK (name <> 'doomed') NOT VALID`);
    try {
      // The forced database failure is the one answer the document does not list: no validation here.
      const res = await new ApiClient(t.url, { validate: false }).post('/api-keys', w.session, {
        org_id: w.orgId,
        name: 'doomed',
      });
      expect(res.status).toBe(500);
    } finally {
      await t.db.pool.query(`ALTER TABLE api_keys DROP CONSTRAINT no_rollback_name`);
    }
    const { rows } = await t.db.pool.query(`SELECT count(*)::int AS n FROM event_outbox WHERE org_id = $1`, [w.orgId]);
    expect(rows[0].n).toBe(0);
    const { rows: keys } = await t.db.pool.query(`SELECT count(*)::int AS n FROM api_keys WHERE org_id = $1`, [
      w.orgId,
    ]);
    expect(keys[0].n).toBe(0);
  });

  it('the outbox write and the key insert commit together: a failing outbox insert leaves no key', async () => {
    const w = await t.seed.world('owner');
    await t.db.pool.query(
      `ALTER TABLE event_outbox ADD CONSTRAINT refuse_org CHECK (org_id <> '${w.orgId}') NOT VALID`,
    );
    try {
      // The forced database failure is the one answer the document does not list: no validation here.
      const res = await new ApiClient(t.url, { validate: false }).post('/api-keys', w.session, {
        org_id: w.orgId,
        name: 'x',
      });
      expect(res.status).toBe(500);
    } finally {
      await t.db.pool.query(`ALTER TABLE event_outbox DROP CONSTRAINT refuse_org`);
    }
    const { rows } = await t.db.pool.query(`SELECT count(*)::int AS n FROM api_keys WHERE org_id = $1`, [w.orgId]);
    expect(rows[0].n).toBe(0);
  });
});

describe('an event survives a crash between commit and delivery', () => {
  it('is committed by an instance that stops before relaying it, and delivered by the next one', async () => {
    const receiver = new WebhookReceiver();
    const url = await receiver.start();
    const db = await createTestDatabase();
    try {
      // The first instance runs no worker: the event can only wait in the outbox.
      const first = await startTestApp({ db, env: { ...WEBHOOK_TEST_ENV, EVENTS_WORKER: 'false' } });
      const w = await first.seed.world('owner');
      const hook = await first.api.post(`/orgs/${w.orgId}/webhooks`, w.session, {
        url,
        event_types: ['api_key.created'],
      });
      receiver.secret = hook.body.secret;
      const minted = await first.api.post('/api-keys', w.session, { org_id: w.orgId });
      expect(minted.status).toBe(201);
      await first.close();
      const { rows } = await db.pool.query(`SELECT type FROM event_outbox`);
      expect(rows).toEqual([{ type: 'api_key.created' }]);
      expect(receiver.received).toEqual([]);

      const second = await startTestApp({ db, env: WEBHOOK_TEST_ENV });
      try {
        await receiver.until(() => receiver.ofType('api_key.created').length > 0);
        expect(receiver.ofType('api_key.created')[0].verified!.data.id).toBe(minted.body.id);
      } finally {
        await second.close();
      }
    } finally {
      await db.drop();
      await receiver.stop();
    }
  });
});
