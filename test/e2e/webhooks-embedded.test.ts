import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../support/http.js';
import { runCli, startServer, type ServerProcess } from '../support/processes.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * The embedded default (PGlite, one in-process connection): pg-boss connects through the server's
 * Unix socket with its own small pool, so the queue never holds the app's only connection.
 */
describe('webhooks on the embedded database', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'kui-embedded-events-'));
  const env = {
    DATA_DIR: dataDir,
    NODE_ENV: 'development',
    WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
    WEBHOOK_ALLOWED_PORTS: '1024-65535',
    EVENTS_POLL_INTERVAL_MS: '200',
  };
  const receiver = new WebhookReceiver();
  let server: ServerProcess;
  let api: ApiClient;
  let url: string;

  beforeAll(async () => {
    url = await receiver.start();
    server = await startServer(env, 60_000);
    api = new ApiClient(server.url);
  }, 90_000);

  afterAll(async () => {
    await server?.stop();
    await receiver.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('delivers a signed webhook while normal requests keep being answered', async () => {
    const orgId = (await runCli(['org', 'create', '--name', 'Acme'], env)).json().id;
    const userId = (await runCli(['user', 'create', '--email', 'ada@example.com'], env)).json().id;
    expect((await runCli(['member', 'add', '--org', orgId, '--user', userId, '--role', 'owner'], env)).code).toBe(0);
    expect((await runCli(['workspace', 'create', '--org', orgId, '--user', userId], env)).code).toBe(0);
    const token = (await runCli(['session', '--user', userId], env)).json().token;

    const hook = await api.post(`/orgs/${orgId}/webhooks`, token, {
      url,
      event_types: ['api_key.created', 'api_key.revoked'],
    });
    expect(hook.status, hook.text).toBe(201);
    receiver.secret = hook.body.secret;

    const minted = [];
    for (let i = 0; i < 5; i++) {
      const res = await api.post('/api-keys', token, { org_id: orgId, name: `k${i}` });
      expect(res.status).toBe(201);
      minted.push(res.body);
      // Requests in between deliveries are answered as usual.
      expect((await api.get('/me', res.body.key)).status).toBe(200);
      expect((await api.get('/usage', res.body.key)).status).toBe(200);
    }
    expect((await api.delete(`/api-keys/${minted[0].id}`, token)).status).toBe(204);

    await receiver.until(
      () => receiver.ofType('api_key.created').length === 5 && receiver.ofType('api_key.revoked').length === 1,
    );
    expect(
      receiver
        .ofType('api_key.created')
        .map((r) => r.verified!.data.name)
        .sort(),
    ).toEqual(['k0', 'k1', 'k2', 'k3', 'k4']);
    expect(receiver.received.every((r) => r.verified !== null)).toBe(true);

    // The worker keeps polling; the app's single connection is still free for requests.
    for (let i = 0; i < 20; i++) expect((await api.get('/me', minted[1].key)).status).toBe(200);
    expect((await api.get('/health/ready')).status).toBe(200);
  }, 120_000);
});
