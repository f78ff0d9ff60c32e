import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiKeysService } from '../../src/api-keys/api-keys.service.js';
import { generateApiKey } from '../../src/auth/api-key-format.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { WEBHOOK_TEST_ENV, WebhookReceiver } from '../support/webhook-receiver.js';

const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const KEY_ID = 'bcb53661c06b4728e59d897fb6165d5c9cda0fd9cdf9d09ead458168deb7518c';
const PUBLIC_KEYS = JSON.stringify([
  { key_identifier: KEY_ID, key: pair.publicKey.export({ type: 'spki', format: 'pem' }), is_current: true },
]);

const githubSign = (body: string, key = pair.privateKey) => sign('sha256', Buffer.from(body), key).toString('base64');

describe('leaked keys: revoked by whoever finds them', () => {
  let t: TestApp;
  const receiver = new WebhookReceiver();

  beforeAll(async () => {
    const url = await receiver.start();
    t = await startTestApp({
      env: { ...WEBHOOK_TEST_ENV, GITHUB_SECRET_SCANNING_KEYS: PUBLIC_KEYS, CREDENTIALS_REVOKE_LIMIT: '50' },
    });
    (t as TestApp & { hookUrl?: string }).hookUrl = url;
  });
  afterAll(async () => {
    await t?.close();
    await receiver.stop();
  });

  async function keyOf(w: { orgId: string; session: string }, name = 'leaky') {
    const res = await t.api.post('/api-keys', w.session, { org_id: w.orgId, name });
    expect(res.status).toBe(201);
    return res.body as { id: string; key: string; lookup: string; last4: string };
  }

  function github(body: string, headers: Record<string, string>) {
    return t.api.request('POST', '/secret-scanning/github', {
      rawBody: body,
      headers: { 'content-type': 'application/json', ...headers },
    });
  }

  describe('POST /secret-scanning/github', () => {
    it("revokes every true positive at once and answers each token in GitHub's format", async () => {
      const w = await t.seed.world('owner');
      const hook = await t.api.post(`/orgs/${w.orgId}/webhooks`, w.session, {
        url: (t as TestApp & { hookUrl: string }).hookUrl,
        event_types: ['api_key.leaked'],
      });
      receiver.secret = hook.body.secret;
      const a = await keyOf(w);
      const b = await keyOf(w);
      expect((await t.api.get('/me', a.key)).status).toBe(200);
      const forged = a.key.slice(0, -1) + (a.key.endsWith('A') ? 'B' : 'A');
      const tokens = [
        { token: a.key, type: 'acme_api_key', url: 'https://github.com/o/r/blob/x/config.yml', source: 'content' },
        { token: forged, type: 'acme_api_key', url: 'https://github.com/o/r/blob/x/y', source: 'content' },
        { token: 'svc_live_notakey', type: 'acme_api_key', url: 'https://github.com/o/r', source: 'commit' },
        { token: b.key, type: 'acme_api_key', url: 'https://gist.github.com/x', source: 'gist' },
      ];
      const body = JSON.stringify(tokens);
      const res = await github(body, {
        'github-public-key-identifier': KEY_ID,
        'github-public-key-signature': githubSign(body),
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual(
        tokens.map((tk, i) => ({
          token_hash: createHash('sha256').update(tk.token).digest('hex'),
          token_type: 'acme_api_key',
          label: i === 0 || i === 3 ? 'true_positive' : 'false_positive',
        })),
      );
      // Immediate: the very next request with either key is refused.
      expect((await t.api.get('/me', a.key)).status).toBe(401);
      expect((await t.api.get('/me', b.key)).status).toBe(401);
      const listed = await t.api.get('/api-keys', w.session);
      expect(listed.body.keys.every((k: { revoked_at?: string }) => k.revoked_at)).toBe(true);

      await receiver.until(
        () => receiver.ofType('api_key.leaked').filter((r) => [a.id, b.id].includes(r.verified!.data.id)).length === 2,
      );
      const leaked = receiver.ofType('api_key.leaked').find((r) => r.verified!.data.id === a.id)!;
      expect(leaked.verified!.data).toMatchObject({
        id: a.id,
        lookup: a.lookup,
        last4: a.last4,
        source: 'github_secret_scanning',
      });
      expect(leaked.body).not.toContain(a.key);
    });

    it.each([
      [
        'a signature by another key',
        (body: string) => ({
          'github-public-key-identifier': KEY_ID,
          'github-public-key-signature': githubSign(body, other.privateKey),
        }),
      ],
      [
        'a signature over another body',
        () => ({ 'github-public-key-identifier': KEY_ID, 'github-public-key-signature': githubSign('[]') }),
      ],
      [
        'an unknown key identifier',
        (body: string) => ({ 'github-public-key-identifier': 'nope', 'github-public-key-signature': githubSign(body) }),
      ],
      ['no signature', () => ({ 'github-public-key-identifier': KEY_ID })],
      ['garbage', () => ({ 'github-public-key-identifier': KEY_ID, 'github-public-key-signature': 'AAAA' })],
    ])('answers 401 to %s and revokes nothing', async (_label, headers) => {
      const w = await t.seed.world('owner');
      const k = await keyOf(w);
      const body = JSON.stringify([
        { token: k.key, type: 'acme_api_key', url: 'https://github.com/x', source: 'content' },
      ]);
      const res = await github(body, headers(body));
      expect(res.status).toBe(401);
      expect((await t.api.get('/me', k.key)).status).toBe(200);
    });

    it('takes a signed report of 1,000 tokens (far above the global 16 KB body limit) and revokes the genuine ones', async () => {
      const w = await t.seed.world('owner');
      const genuine = [await keyOf(w), await keyOf(w)];
      const tokens = Array.from({ length: 1000 }, (_, i) => ({
        token: i === 17 ? genuine[0].key : i === 998 ? genuine[1].key : generateApiKey().key,
        type: 'acme_api_key',
        url: `https://github.com/some-org/some-repository/blob/${'0123456789abcdef'.repeat(2)}01234567/config/deploy/production-${i}.yml`,
        source: 'content',
      }));
      const body = JSON.stringify(tokens);
      expect(Buffer.byteLength(body)).toBeGreaterThan(200 * 1024);
      const res = await github(body, {
        'github-public-key-identifier': KEY_ID,
        'github-public-key-signature': githubSign(body),
      });
      expect(res.status).toBe(200);
      expect(res.body).toHaveLength(1000);
      expect(res.body.flatMap((r: { label: string }, i: number) => (r.label === 'true_positive' ? [i] : []))).toEqual([
        17, 998,
      ]);
      for (const k of genuine) expect((await t.api.get('/me', k.key)).status).toBe(401);
    });

    it('refuses a report beyond its own limit unread (413), and every other route keeps the global 16 KB limit', async () => {
      const huge = JSON.stringify([{ token: 'x', type: 'y', url: 'z'.repeat(1024 * 1024), source: 'content' }]);
      expect(
        (await github(huge, { 'github-public-key-identifier': KEY_ID, 'github-public-key-signature': 'AAAA' })).status,
      ).toBe(413);
      const credentials = Array.from({ length: 100 }, () => 'svc_live_' + 'x'.repeat(190));
      expect(Buffer.byteLength(JSON.stringify({ credentials }))).toBeGreaterThan(16 * 1024);
      expect((await t.api.post('/credentials/revoke', undefined, { credentials })).status).toBe(413);
    });

    it('answers 400 to a signed body that is not a list of tokens', async () => {
      const body = JSON.stringify({ token: 'x' });
      const res = await github(body, {
        'github-public-key-identifier': KEY_ID,
        'github-public-key-signature': githubSign(body),
      });
      expect(res.status).toBe(400);
    });
  });

  describe('POST /credentials/revoke', () => {
    it('revokes every genuine key in the list and answers 202 whatever was found', async () => {
      const w = await t.seed.world('owner');
      const k = await keyOf(w);
      const res = await t.api.post(
        '/credentials/revoke',
        undefined,
        { credentials: [k.key, 'svc_live_nothing', 'hello'] },
        { 'x-forwarded-for': '1.1.1.1' },
      );
      expect(res.status).toBe(202);
      expect(res.text).toBe('');
      await expect.poll(async () => (await t.api.get('/me', k.key)).status).toBe(401);
      const none = await t.api.post('/credentials/revoke', undefined, { credentials: ['svc_live_nothing'] });
      expect(none.status).toBe(202);
      expect(none.text).toBe('');
    });

    it('answers before the revocation is written and applied, so a genuine key is answered as fast as a bogus one; the key is revoked right after', async () => {
      const w = await t.seed.world('owner');
      const k = await keyOf(w);
      const apiKeys = t.app.get(ApiKeysService);
      const revokeLeaked = apiKeys.revokeLeaked.bind(apiKeys);
      // The revocation (its writes and the wait for every instance's acknowledgement) is held back.
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const spy = vi.spyOn(apiKeys, 'revokeLeaked').mockImplementation(async (ids, source) => {
        await held;
        return revokeLeaked(ids, source);
      });
      try {
        const report = (credentials: string[]) =>
          Promise.race([
            t.api.post('/credentials/revoke', undefined, { credentials }).then((r) => r.status),
            new Promise((resolve) => setTimeout(() => resolve('still waiting for the revocation'), 3000)),
          ]);
        expect(await report([k.key])).toBe(202);
        expect(await report([generateApiKey().key])).toBe(202);
        expect(spy).toHaveBeenCalledWith([k.id], 'public_revocation');
        expect((await t.api.get('/me', k.key)).status, 'not revoked yet: the answer came first').toBe(200);
        release();
        await expect.poll(async () => (await t.api.get('/me', k.key)).status).toBe(401);
      } finally {
        release();
        spy.mockRestore();
      }
    });

    it('logs a revocation that fails after the answer, with the key id and never the key', async () => {
      const w = await t.seed.world('owner');
      const k = await keyOf(w);
      const spy = vi
        .spyOn(t.app.get(ApiKeysService), 'revokeLeaked')
        .mockRejectedValue(new Error('database went away'));
      const errors = vi.spyOn(Logger.prototype, 'error');
      try {
        expect((await t.api.post('/credentials/revoke', undefined, { credentials: [k.key] })).status).toBe(202);
        await expect
          .poll(() => errors.mock.calls.map((c) => String(c[0])).find((m) => m.includes(k.id)))
          .toMatch(/failed after the answer.*database went away/);
        expect(errors.mock.calls.map((c) => String(c[0])).join('\n')).not.toContain(k.key);
      } finally {
        spy.mockRestore();
        errors.mockRestore();
      }
    });

    it.each([
      [{}, 'credentials must be an array of strings'],
      [{ credentials: [] }, 'credentials must hold 1 to 100 items'],
      [{ credentials: Array.from({ length: 101 }, () => 'x') }, 'credentials must hold 1 to 100 items'],
      [{ credentials: [1] }, 'credentials must be an array of strings'],
      [{ credentials: ['x'], extra: 1 }, 'extra is not an accepted field'],
    ])('answers 400 naming the rule for %j', async (body, message) => {
      const res = await t.api.post('/credentials/revoke', undefined, body);
      expect(res.status).toBe(400);
      expect(res.body.message).toBe(message);
    });
  });
});

describe('POST /credentials/revoke is throttled per address', () => {
  it('answers 429 with Retry-After past the limit', async () => {
    const t = await startTestApp({ env: { CREDENTIALS_REVOKE_LIMIT: '2' } });
    try {
      const statuses = [];
      for (let i = 0; i < 3; i++)
        statuses.push((await t.api.post('/credentials/revoke', undefined, { credentials: ['svc_live_x'] })).status);
      expect(statuses).toEqual([202, 202, 429]);
      const res = await t.api.post('/credentials/revoke', undefined, { credentials: ['svc_live_x'] });
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      await t.close();
    }
  });

  it('answers 503 on the GitHub route when no GitHub keys are configured', async () => {
    const t = await startTestApp();
    try {
      const res = await t.api.request('POST', '/secret-scanning/github', {
        rawBody: '[]',
        headers: { 'github-public-key-identifier': 'x', 'github-public-key-signature': 'x' },
      });
      expect(res.status).toBe(503);
    } finally {
      await t.close();
    }
  });
});

describe('a reported leak is refused on every instance', () => {
  it('a key revoked through one instance gets 401 on another, and its previous secret counts as the key', async () => {
    const { createTestDatabase } = await import('../support/database.js');
    const db = await createTestDatabase();
    const a = await startTestApp({ db });
    const b = await startTestApp({ db });
    try {
      const w = await a.seed.world('owner');
      const key = (await a.api.post('/api-keys', w.session, { org_id: w.orgId })).body;
      expect((await b.api.get('/me', key.key)).status).toBe(200);
      expect((await a.api.post('/credentials/revoke', undefined, { credentials: [key.key] })).status).toBe(202);
      // Revoked right after the answer (which does not wait for it), then refused by both instances.
      await expect.poll(async () => (await a.api.get('/me', key.key)).status).toBe(401);
      expect((await b.api.get('/me', key.key)).status).toBe(401);

      // Rotated: the replaced secret still verifies during its grace; reporting it revokes the key.
      const other = (await a.api.post('/api-keys', w.session, { org_id: w.orgId })).body;
      const rotated = (await a.api.post(`/api-keys/${other.id}/rotate`, w.session, { grace_period_seconds: 3600 }))
        .body;
      expect((await b.api.get('/me', other.key)).status).toBe(200);
      expect((await b.api.post('/credentials/revoke', undefined, { credentials: [other.key] })).status).toBe(202);
      await expect.poll(async () => (await b.api.get('/me', rotated.key)).status).toBe(401);
      expect((await a.api.get('/me', rotated.key)).status).toBe(401);
      expect((await a.api.get('/me', other.key)).status).toBe(401);
    } finally {
      await a.close();
      await b.close();
      await db.drop();
    }
  });
});
