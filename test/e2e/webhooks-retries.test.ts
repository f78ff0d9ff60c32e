import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { startWebhookApp, WEBHOOK_TEST_ENV, WebhookReceiver } from '../support/webhook-receiver.js';

describe('webhook retries: backoff, then the failing state', () => {
  let t: TestApp;
  let url: string;
  let close: () => Promise<void>;
  const receiver = new WebhookReceiver();
  // WEBHOOK_TEST_ENV: 2 retries after the first attempt, 1 s apart (exponential with jitter, capped at 1 s).
  beforeAll(async () => ({ t, url, close } = await startWebhookApp(receiver)));
  afterAll(async () => close?.());

  it('retries a failing receiver with exponential backoff, then marks the endpoint failing and tells the org in the audit log', async () => {
    const w = await t.seed.world('owner');
    const hook = await t.api.post(`/orgs/${w.orgId}/webhooks`, w.session, { url, event_types: ['api_key.created'] });
    receiver.secret = hook.body.secret;
    receiver.answer = () => 503;
    try {
      const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId });
      const mine = () => receiver.ofType('api_key.created').filter((r) => r.verified!.data.id === minted.body.id);
      await receiver.until(() => mine().length === 3);
      // One event, one id: every attempt carries the same webhook-id.
      expect(new Set(mine().map((r) => r.headers['webhook-id'])).size).toBe(1);

      let got;
      do got = await t.api.get(`/orgs/${w.orgId}/webhooks/${hook.body.id}`, w.session);
      while (!got.body.failing_since);
      const log = await t.api.get(`/orgs/${w.orgId}/webhooks/${hook.body.id}/deliveries`, w.session);
      expect(
        log.body.deliveries.map((d: { attempt: number; status: string; response_status: number }) => [
          d.attempt,
          d.status,
          d.response_status,
        ]),
      ).toEqual([
        [3, 'failed', 503],
        [2, 'failed', 503],
        [1, 'failed', 503],
      ]);

      // The job carries the backoff settings pg-boss applies (exponential, with jitter).
      const { rows } = await t.db.pool.query(
        `SELECT retry_limit, retry_backoff, retry_delay FROM pgboss.job WHERE name = 'webhook-deliver' AND data->'event'->>'id' = $1`,
        [mine()[0].headers['webhook-id']],
      );
      expect(rows).toEqual([{ retry_limit: 2, retry_backoff: true, retry_delay: 1 }]);

      const audit = await t.api.get(`/orgs/${w.orgId}/audit-events`, w.session);
      const failing = audit.body.events.find((e: { action: string }) => e.action === 'webhook.failing');
      expect(failing).toMatchObject({
        actor: { type: 'system', source: 'webhook_delivery' },
        target: { type: 'webhook', id: hook.body.id },
      });
      expect(failing.details).toMatchObject({ attempts: 3, event_type: 'api_key.created' });

      // Enabling it again clears the mark.
      const patched = await t.api.request('PATCH', `/orgs/${w.orgId}/webhooks/${hook.body.id}`, {
        token: w.session,
        body: { enabled: true },
      });
      expect(patched.body).not.toHaveProperty('failing_since');
    } finally {
      receiver.answer = () => 200;
    }
  });

  it('a receiver that recovers gets the event on a later attempt', async () => {
    const w = await t.seed.world('owner');
    const hook = await t.api.post(`/orgs/${w.orgId}/webhooks`, w.session, { url, event_types: ['api_key.created'] });
    receiver.secret = hook.body.secret;
    const start = receiver.received.length;
    receiver.answer = (n) => (n === start + 1 ? 500 : 200);
    try {
      const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId });
      await receiver.until(
        () => receiver.ofType('api_key.created').filter((r) => r.verified!.data.id === minted.body.id).length === 2,
      );
      let log;
      do log = await t.api.get(`/orgs/${w.orgId}/webhooks/${hook.body.id}/deliveries`, w.session);
      while (log.body.deliveries.length < 2);
      expect(log.body.deliveries.map((d: { attempt: number; status: string }) => [d.attempt, d.status])).toEqual([
        [2, 'succeeded'],
        [1, 'failed'],
      ]);
      expect((await t.api.get(`/orgs/${w.orgId}/webhooks/${hook.body.id}`, w.session)).body).not.toHaveProperty(
        'failing_since',
      );
    } finally {
      receiver.answer = () => 200;
    }
  });
});

describe('two instances running workers', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  const receiver = new WebhookReceiver();
  let url: string;

  beforeAll(async () => {
    url = await receiver.start();
    db = await createTestDatabase();
    a = await startTestApp({ db, env: WEBHOOK_TEST_ENV });
    b = await startTestApp({ db, env: WEBHOOK_TEST_ENV });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await db?.drop();
    await receiver.stop();
  });

  it('never deliver the same attempt twice: each event reaches the receiver exactly once', async () => {
    const w = await a.seed.world('owner');
    const hook = await a.api.post(`/orgs/${w.orgId}/webhooks`, w.session, {
      url,
      event_types: ['api_key.created', 'api_key.revoked'],
    });
    receiver.secret = hook.body.secret;
    const ids: string[] = [];
    // Mints and revokes spread over both instances, so both relays and both workers have work.
    await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const app = i % 2 ? a : b;
        const res = await app.api.post('/api-keys', w.session, { org_id: w.orgId, name: `k${i}` });
        ids.push(res.body.id);
        expect((await (i % 3 ? a : b).api.delete(`/api-keys/${res.body.id}`, w.session)).status).toBe(204);
      }),
    );
    await receiver.until((r) => r.length >= 24);
    // Let any duplicate that would come, come: both instances poll several times meanwhile.
    await new Promise((r) => setTimeout(r, 1500));
    const webhookIds = receiver.received.map((r) => r.headers['webhook-id']);
    expect(webhookIds).toHaveLength(24);
    expect(new Set(webhookIds).size).toBe(24);
    expect(receiver.received.every((r) => r.verified !== null)).toBe(true);
    const { rows } = await db.pool.query(
      `SELECT count(*)::int AS n, count(DISTINCT job_id)::int AS jobs, max(attempt) AS max FROM webhook_deliveries`,
    );
    expect(rows[0]).toEqual({ n: 24, jobs: 24, max: 1 });
  });
});
