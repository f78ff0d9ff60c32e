import { EVENT_TYPES } from '../../src/events/event-types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { startWebhookApp, WebhookReceiver } from '../support/webhook-receiver.js';

const NOWHERE = '00000000-0000-4000-8000-000000000000';

describe('webhook endpoints: /orgs/{org_id}/webhooks', () => {
  let t: TestApp;
  let url: string;
  let close: () => Promise<void>;
  const receiver = new WebhookReceiver();
  beforeAll(async () => ({ t, url, close } = await startWebhookApp(receiver)));
  afterAll(async () => close?.());

  const create = (session: string, orgId: string, body: unknown) =>
    t.api.post(`/orgs/${orgId}/webhooks`, session, body);

  it('creates, shows the secret once, lists, reads, updates and deletes, auditing every change', async () => {
    const w = await t.seed.world('admin');
    const created = await create(w.session, w.orgId, {
      url,
      event_types: ['api_key.created', 'api_key.created', 'usage.threshold'],
      description: 'ops',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      org_id: w.orgId,
      url,
      description: 'ops',
      event_types: ['api_key.created', 'usage.threshold'],
      enabled: true,
    });
    expect(created.body.secret).toMatch(/^whsec_/);
    expect(created.body).not.toHaveProperty('failing_since');
    const id = created.body.id;

    // Never in clear in the database.
    const { rows } = await t.db.pool.query(`SELECT secret_box FROM webhook_endpoints WHERE id = $1`, [id]);
    expect(rows[0].secret_box.toString('latin1')).not.toContain(created.body.secret.slice(6));

    const got = await t.api.get(`/orgs/${w.orgId}/webhooks/${id}`, w.session);
    expect(got.status).toBe(200);
    expect(got.body).not.toHaveProperty('secret');
    const { secret: _secret, ...record } = created.body;
    expect(got.body).toEqual(record);

    const patched = await t.api.request('PATCH', `/orgs/${w.orgId}/webhooks/${id}`, {
      token: w.session,
      body: { enabled: false, event_types: ['member.removed'] },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ enabled: false, event_types: ['member.removed'], url });

    const list = await t.api.get(`/orgs/${w.orgId}/webhooks`, w.session);
    expect(list.body.webhooks.map((h: { id: string }) => h.id)).toEqual([id]);
    expect(list.text).not.toContain('whsec_');

    expect((await t.api.delete(`/orgs/${w.orgId}/webhooks/${id}`, w.session)).status).toBe(204);
    expect((await t.api.get(`/orgs/${w.orgId}/webhooks/${id}`, w.session)).status).toBe(404);
    expect((await t.api.delete(`/orgs/${w.orgId}/webhooks/${id}`, w.session)).status).toBe(404);

    const audit = await t.api.get(`/orgs/${w.orgId}/audit-events`, w.session);
    const actions = audit.body.events
      .filter((e: { target: { id: string } }) => e.target.id === id)
      .map((e: { action: string }) => e.action);
    expect(actions).toEqual(['webhook.deleted', 'webhook.updated', 'webhook.created']);
    expect(audit.text).not.toContain(created.body.secret);
  });

  it('paginates the list with the shared keyset helper', async () => {
    const w = await t.seed.world('owner');
    const ids = [];
    for (let i = 0; i < 3; i++)
      ids.push((await create(w.session, w.orgId, { url, event_types: ['api_key.created'] })).body.id);
    const first = await t.api.get(`/orgs/${w.orgId}/webhooks?limit=2`, w.session);
    expect(first.body.webhooks).toHaveLength(2);
    expect(first.body.next_cursor).toBeTypeOf('string');
    const second = await t.api.get(`/orgs/${w.orgId}/webhooks?limit=2&cursor=${first.body.next_cursor}`, w.session);
    expect(second.body.webhooks).toHaveLength(1);
    expect(second.body).not.toHaveProperty('next_cursor');
    expect(new Set([...first.body.webhooks, ...second.body.webhooks].map((h: { id: string }) => h.id))).toEqual(
      new Set(ids),
    );
    expect((await t.api.get(`/orgs/${w.orgId}/webhooks?limit=0`, w.session)).status).toBe(400);
    expect((await t.api.get(`/orgs/${w.orgId}/webhooks?cursor=zzz`, w.session)).status).toBe(400);
  });

  describe('who may manage them', () => {
    it.each(['member', 'viewer'] as const)('a %s gets 403', async (role) => {
      const w = await t.seed.world(role);
      const res = await create(w.session, w.orgId, { url, event_types: ['api_key.created'] });
      expect(res.status).toBe(403);
      expect((await t.api.get(`/orgs/${w.orgId}/webhooks`, w.session)).status).toBe(403);
    });

    it('an API key gets 403, no credential 401', async () => {
      const w = await t.seed.world('owner');
      const key = (await t.api.post('/api-keys', w.session, { org_id: w.orgId })).body.key;
      expect((await t.api.get(`/orgs/${w.orgId}/webhooks`, key)).status).toBe(403);
      expect((await t.api.get(`/orgs/${w.orgId}/webhooks`)).status).toBe(401);
    });

    it("a non-member, a missing org, and another org's webhook all get the same 404", async () => {
      const a = await t.seed.world('owner');
      const b = await t.seed.world('owner');
      const hook = (await create(a.session, a.orgId, { url, event_types: ['api_key.created'] })).body.id;
      const answers = [
        await t.api.get(`/orgs/${a.orgId}/webhooks`, b.session),
        await t.api.get(`/orgs/${NOWHERE}/webhooks`, b.session),
      ];
      for (const res of answers)
        expect(res.body).toEqual({ statusCode: 404, error: 'Not Found', message: 'Organisation not found' });
      const notYours = await t.api.get(`/orgs/${b.orgId}/webhooks/${hook}`, b.session);
      const missing = await t.api.get(`/orgs/${b.orgId}/webhooks/${NOWHERE}`, b.session);
      expect(notYours.status).toBe(404);
      expect(notYours.body).toEqual(missing.body);
    });
  });

  describe('strict validation: 400 naming the field', () => {
    it.each([
      [{}, 'url must be a string; event_types must be an array of event types'],
      [
        { url: 'ftp://x.example/', event_types: ['api_key.created'] },
        'url must be an absolute http or https URL without user name or password',
      ],
      [
        { url: 'https://user:pw@x.example/', event_types: ['api_key.created'] },
        'url must be an absolute http or https URL without user name or password',
      ],
      [{ url: 'https://x.example/' }, 'event_types must be an array of event types'],
      [{ url: 'https://x.example/', event_types: [] }, `event_types must name 1 to ${EVENT_TYPES.length} event types`],
      [
        { url: 'https://x.example/', event_types: ['api_key.stolen'] },
        expect.stringMatching(/^event_types may only contain api_key.created, /),
      ],
      [
        { url: 'https://x.example/', event_types: ['api_key.created'], description: 'x'.repeat(201) },
        'description must be at most 200 characters',
      ],
      [
        { url: 'https://x.example/', event_types: ['api_key.created'], secret: 'mine' },
        'secret is not an accepted field',
      ],
    ])('POST %j', async (body, message) => {
      const w = await t.seed.world('owner');
      const res = await create(w.session, w.orgId, body);
      expect(res.status).toBe(400);
      expect(res.body.message).toEqual(message);
    });

    it('PATCH refuses a non-boolean enabled and an unknown field; bad path ids are 400', async () => {
      const w = await t.seed.world('owner');
      const id = (await create(w.session, w.orgId, { url, event_types: ['api_key.created'] })).body.id;
      const bad = await t.api.request('PATCH', `/orgs/${w.orgId}/webhooks/${id}`, {
        token: w.session,
        body: { enabled: 'yes' },
      });
      expect(bad.body.message).toBe('enabled must be a boolean');
      const unknown = await t.api.request('PATCH', `/orgs/${w.orgId}/webhooks/${id}`, {
        token: w.session,
        body: { org_id: NOWHERE },
      });
      expect(unknown.body.message).toBe('org_id is not an accepted field');
      expect((await t.api.get(`/orgs/nope/webhooks`, w.session)).body.message).toBe('org_id must be a UUID');
      expect((await t.api.get(`/orgs/${w.orgId}/webhooks/nope`, w.session)).body.message).toBe('id must be a UUID');
    });
  });

  it('POST /{id}/test sends a signed webhook.test event; the delivery log shows it; retry redelivers the same event', async () => {
    const w = await t.seed.world('owner');
    const created = await create(w.session, w.orgId, { url, event_types: ['member.removed'] });
    receiver.secret = created.body.secret;
    const res = await t.api.post(`/orgs/${w.orgId}/webhooks/${created.body.id}/test`, w.session, undefined);
    expect(res.status).toBe(202);
    const eventId = res.body.event_id;
    await receiver.until((r) => r.some((m) => m.headers['webhook-id'] === eventId));
    const msg = receiver.received.find((m) => m.headers['webhook-id'] === eventId)!;
    expect(msg.verified).toMatchObject({
      type: 'webhook.test',
      data: { webhook_id: created.body.id, org_id: w.orgId },
    });

    let log;
    do log = await t.api.get(`/orgs/${w.orgId}/webhooks/${created.body.id}/deliveries`, w.session);
    while (log.body.deliveries.length === 0);
    expect(log.body.deliveries[0]).toMatchObject({
      event_id: eventId,
      event_type: 'webhook.test',
      status: 'succeeded',
      response_status: 200,
      attempt: 1,
      response_body: 'ok from the receiver',
    });
    expect(log.body.deliveries[0].latency_ms).toBeTypeOf('number');

    const retried = await t.api.post(
      `/orgs/${w.orgId}/webhooks/${created.body.id}/deliveries/${log.body.deliveries[0].id}/retry`,
      w.session,
      undefined,
    );
    expect(retried.status).toBe(202);
    await receiver.until((r) => r.filter((m) => m.headers['webhook-id'] === eventId).length === 2);
    const missing = await t.api.post(
      `/orgs/${w.orgId}/webhooks/${created.body.id}/deliveries/${NOWHERE}/retry`,
      w.session,
      undefined,
    );
    expect(missing.status).toBe(404);
  });
});

describe('the OpenAPI document for events out', () => {
  it('documents every webhook and leaked-key route with its statuses, and closed request bodies', async () => {
    const t = await startTestApp();
    try {
      const doc = (await t.api.get('/openapi.json')).body;
      const expected: Record<string, Record<string, number[]>> = {
        '/orgs/{org_id}/webhooks': {
          post: [201, 400, 401, 403, 404, 409, 429, 501, 503],
          get: [200, 400, 401, 403, 404, 429, 503],
        },
        '/orgs/{org_id}/webhooks/{id}': {
          get: [200, 400, 401, 403, 404],
          patch: [200, 400, 401, 403, 404],
          delete: [204, 400, 401, 403, 404],
        },
        '/orgs/{org_id}/webhooks/{id}/test': { post: [202, 400, 401, 403, 404, 429, 503] },
        '/orgs/{org_id}/webhooks/{id}/rotate-secret': { post: [200, 400, 401, 403, 404, 501, 503] },
        '/orgs/{org_id}/webhooks/{id}/deliveries': { get: [200, 400, 401, 403, 404] },
        '/orgs/{org_id}/webhooks/{id}/deliveries/{delivery_id}/retry': { post: [202, 400, 401, 403, 404, 429, 503] },
        '/credentials/revoke': { post: [202, 400, 429, 503] },
        '/secret-scanning/github': { post: [200, 400, 401, 503] },
      };
      for (const [path, methods] of Object.entries(expected)) {
        for (const [method, statuses] of Object.entries(methods)) {
          const op = doc.paths[path]?.[method];
          expect(op, `${method} ${path}`).toBeDefined();
          for (const status of statuses)
            expect(op.responses[String(status)], `${method} ${path} ${status}`).toBeDefined();
        }
      }
      for (const name of [
        'CreateWebhookRequest',
        'UpdateWebhookRequest',
        'RotateWebhookSecretRequest',
        'RevokeCredentialsRequest',
      ]) {
        expect(doc.components.schemas[name].additionalProperties).toBe(false);
      }
      expect(doc.paths['/orgs/{org_id}/webhooks'].post.security).toEqual([{ session: [] }]);
      const rotate = doc.paths['/orgs/{org_id}/webhooks/{id}/rotate-secret'].post;
      expect(rotate.security).toEqual([{ session: [] }]);
      expect(rotate.responses['200'].content['application/json'].schema.$ref).toBe(
        '#/components/schemas/RotatedWebhookSecret',
      );
      expect(doc.components.schemas.RotateWebhookSecretRequest.properties.overlap_seconds).toMatchObject({
        type: 'integer',
        minimum: 0,
        maximum: 604800,
        default: 86400,
      });
      expect(doc.paths['/orgs/{org_id}/webhooks/{id}/test'].post.responses['429'].headers['Retry-After']).toBeDefined();
    } finally {
      await t.close();
    }
  });
});
