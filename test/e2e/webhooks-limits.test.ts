import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { WEBHOOK_TEST_ENV, WebhookReceiver } from '../support/webhook-receiver.js';

/** A loopback receiver whose every answer the test decides (status, raw body, or holding the request). */
async function receiverOf(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => handle(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, server };
}

async function closeAll(server: Server | undefined): Promise<void> {
  if (!server) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** One org cannot starve the others: caps, a test-and-retry budget, a fair share of delivery slots. */
describe('webhook limits per org', () => {
  let t: TestApp;
  const receiver = new WebhookReceiver();
  let url: string;
  beforeAll(async () => {
    url = await receiver.start();
    t = await startTestApp({
      // Racing creations queue on the org's lock, each within the statement timeout: room for a busy machine.
      env: {
        ...WEBHOOK_TEST_ENV,
        WEBHOOK_MAX_ENDPOINTS_PER_ORG: '2',
        WEBHOOK_SEND_RATE_LIMIT: '5',
        WEBHOOK_TIMEOUT_MS: '20000',
        DB_STATEMENT_TIMEOUT_MS: '20000',
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver.stop();
  });

  const create = (session: string, orgId: string, target = url) =>
    t.api.post(`/orgs/${orgId}/webhooks`, session, { url: target, event_types: ['api_key.created'] });

  it('refuses one endpoint more than WEBHOOK_MAX_ENDPOINTS_PER_ORG with 409, also when creations race, and counts per org', async () => {
    const w = await t.seed.world('owner');
    const racing = await Promise.all([0, 1, 2, 3].map(() => create(w.session, w.orgId)));
    expect(racing.map((r) => r.status).sort()).toEqual([201, 201, 409, 409]);
    const refused = racing.find((r) => r.status === 409)!;
    expect(refused.body.message).toBe(
      'This org already has 2 webhook endpoints, the most it may have; delete one first',
    );
    const { rows } = await t.db.pool.query(`SELECT count(*)::int AS n FROM webhook_endpoints WHERE org_id = $1`, [
      w.orgId,
    ]);
    expect(rows[0].n).toBe(2);

    const other = await t.seed.world('owner');
    expect((await create(other.session, other.orgId)).status).toBe(201);
    // Deleting one makes room again.
    const first = racing.find((r) => r.status === 201)!;
    expect((await t.api.delete(`/orgs/${w.orgId}/webhooks/${first.body.id}`, w.session)).status).toBe(204);
    expect((await create(w.session, w.orgId)).status).toBe(201);
  });

  it('throttles test and retry per org (429 with Retry-After), audits each one made, and leaves other orgs alone', async () => {
    const w = await t.seed.world('admin');
    const hook = (await create(w.session, w.orgId)).body;
    receiver.secret = hook.secret;
    const sent: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await t.api.post(`/orgs/${w.orgId}/webhooks/${hook.id}/test`, w.session, {});
      expect(res.status).toBe(202);
      sent.push(res.body.event_id);
    }
    await receiver.until(() => sent.every((id) => receiver.received.some((r) => r.headers['webhook-id'] === id)));
    const deliveries = await t.api.get(`/orgs/${w.orgId}/webhooks/${hook.id}/deliveries`, w.session);
    const retried = await t.api.post(
      `/orgs/${w.orgId}/webhooks/${hook.id}/deliveries/${deliveries.body.deliveries[0].id}/retry`,
      w.session,
      {},
    );
    expect(retried.status).toBe(202);

    const over = await t.api.post(`/orgs/${w.orgId}/webhooks/${hook.id}/test`, w.session, {});
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(over.body.message).toMatch(/^Too many webhook test and retry requests for this org; retry in \d+ seconds$/);
    const overRetry = await t.api.post(
      `/orgs/${w.orgId}/webhooks/${hook.id}/deliveries/${deliveries.body.deliveries[0].id}/retry`,
      w.session,
      {},
    );
    expect(overRetry.status).toBe(429);

    // Another org's budget is its own.
    const other = await t.seed.world('owner');
    const otherHook = (await create(other.session, other.orgId)).body;
    expect((await t.api.post(`/orgs/${other.orgId}/webhooks/${otherHook.id}/test`, other.session, {})).status).toBe(
      202,
    );

    const audit = await t.api.get(`/orgs/${w.orgId}/audit-events`, w.session);
    const mine = audit.body.events.filter((e: { target: { id: string } }) => e.target.id === hook.id);
    expect(mine.filter((e: { action: string }) => e.action === 'webhook.tested')).toHaveLength(4);
    const retryRow = mine.find((e: { action: string }) => e.action === 'webhook.delivery_retried');
    expect(retryRow).toMatchObject({
      actor: { type: 'user', id: w.userId },
      details: { delivery_id: deliveries.body.deliveries[0].id, event_id: deliveries.body.deliveries[0].event_id },
    });
    expect(mine.find((e: { action: string }) => e.action === 'webhook.tested').details.event_id).toBe(sent[3]);
  });

  it("gives each org a fair share of the delivery slots: one org's receiver that never answers does not hold them all", async () => {
    const held: ServerResponse[] = [];
    const slow = await receiverOf((_req, res) => held.push(res));
    try {
      const a = await t.seed.world('owner');
      const hookA = (await create(a.session, a.orgId, slow.url)).body;
      for (let i = 0; i < 4; i++)
        expect((await t.api.post(`/orgs/${a.orgId}/webhooks/${hookA.id}/test`, a.session, {})).status).toBe(202);
      await expect.poll(() => held.length, { timeout: 10_000 }).toBe(2);

      const b = await t.seed.world('owner');
      const hookB = (await create(b.session, b.orgId)).body;
      const queued = await t.api.post(`/orgs/${b.orgId}/webhooks/${hookB.id}/test`, b.session, {});
      // Org A's four jobs would hold all four slots for 20 s; B's event arrives while they hang.
      await expect
        .poll(() => receiver.received.some((r) => r.headers['webhook-id'] === queued.body.event_id), { timeout: 8_000 })
        .toBe(true);
      expect(held).toHaveLength(2);
    } finally {
      for (const res of held) res.end();
      await closeAll(slow.server);
    }
  });

  it('records an answer with NUL bytes: the attempt is in the delivery log and a failing endpoint is marked failing', async () => {
    const nul = await receiverOf((req, res) => {
      res.statusCode = req.url === '/ok' ? 200 : 500;
      res.end('bad\u0000answer\u0000');
    });
    try {
      const w = await t.seed.world('owner');
      const ok = (
        await t.api.post(`/orgs/${w.orgId}/webhooks`, w.session, {
          url: nul.url.replace('/hook', '/ok'),
          event_types: ['api_key.created'],
        })
      ).body;
      const failing = (await create(w.session, w.orgId, nul.url)).body;
      expect((await t.api.post(`/orgs/${w.orgId}/webhooks/${ok.id}/test`, w.session, {})).status).toBe(202);
      expect((await t.api.post(`/orgs/${w.orgId}/webhooks/${failing.id}/test`, w.session, {})).status).toBe(202);

      await expect
        .poll(
          async () => (await t.api.get(`/orgs/${w.orgId}/webhooks/${ok.id}/deliveries`, w.session)).body.deliveries,
          { timeout: 10_000 },
        )
        .toEqual([
          expect.objectContaining({
            status: 'succeeded',
            response_status: 200,
            response_body: 'bad\uFFFDanswer\uFFFD',
          }),
        ]);
      // WEBHOOK_TEST_ENV: 2 retries, 1 s apart; then the endpoint is marked failing.
      await expect
        .poll(async () => (await t.api.get(`/orgs/${w.orgId}/webhooks/${failing.id}`, w.session)).body.failing_since, {
          timeout: 15_000,
        })
        .toBeTypeOf('string');
      const log = (await t.api.get(`/orgs/${w.orgId}/webhooks/${failing.id}/deliveries`, w.session)).body.deliveries;
      expect(log).toHaveLength(3);
      expect(
        log.every(
          (d: { status: string; response_body: string }) =>
            d.status === 'failed' && d.response_body === 'bad\uFFFDanswer\uFFFD',
        ),
      ).toBe(true);
    } finally {
      await closeAll(nul.server);
    }
  });

  it('stores a refusal as "refused: private or reserved address" in the delivery log and the audit log', async () => {
    const w = await t.seed.world('owner');
    // Loopback is allowed here (127.0.0.1/32), 127.0.0.2 is not; nothing listens there either way.
    const hook = (await create(w.session, w.orgId, 'http://[::ffff:127.0.0.2]:4000/hook')).body;
    expect((await t.api.post(`/orgs/${w.orgId}/webhooks/${hook.id}/test`, w.session, {})).status).toBe(202);
    await expect
      .poll(async () => (await t.api.get(`/orgs/${w.orgId}/webhooks/${hook.id}`, w.session)).body.failing_since, {
        timeout: 15_000,
      })
      .toBeTypeOf('string');
    const log = (await t.api.get(`/orgs/${w.orgId}/webhooks/${hook.id}/deliveries`, w.session)).body.deliveries;
    expect(log.map((d: { error: string }) => d.error)).toEqual(Array(3).fill('refused: private or reserved address'));
    const audit = await t.api.get(`/orgs/${w.orgId}/audit-events?action=webhook.failing`, w.session);
    expect(audit.body.events[0].details.last_error).toBe('refused: private or reserved address');
    // The URL is the admin's own; the address the guard judged (here the URL's, normalised) appears nowhere else.
    const { url: _url, ...rest } = audit.body.events[0].details;
    expect(JSON.stringify(rest)).not.toMatch(/127\.0\.0\.2|7f00:2/);
  });
});
