import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * Who you are is checked before what you sent: a malformed JSON body does not pre-empt the
 * 401 / 403 / 501 a credential check gives, while an oversized body is still refused unread.
 */
describe('the order of checks on POST /api-keys', () => {
  let t: TestApp;
  let bare: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
    bare = await startTestApp({ db: t.db, env: { API_KEY_SECRET: undefined } });
  });
  afterAll(async () => {
    await bare?.close();
    await t?.close();
  });

  const post = (app: TestApp, token: string | undefined, rawBody: string, type = 'application/json') =>
    app.api.request('POST', '/api-keys', { token, rawBody, headers: { 'content-type': type } });

  it('answers 401 with WWW-Authenticate, not 400, for malformed JSON without a valid credential', async () => {
    const none = await post(t, undefined, '{bad');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    const garbage = await post(t, 'garbage', '{bad');
    expect(garbage.status).toBe(401);
    expect(garbage.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('answers 403 to an API key and 501 when keys are not configured, before looking at the body', async () => {
    const w = await t.seed.world('owner');
    const key = (await t.api.post('/api-keys', w.session, { org_id: w.orgId })).body.key as string;
    expect((await post(t, key, '{bad')).status).toBe(403);
    expect((await post(bare, w.session, '{bad')).status).toBe(501);
  });

  it('still names the problem once the credential is good', async () => {
    const w = await t.seed.world('owner');
    const res = await post(t, w.session, '{bad');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      statusCode: 400,
      error: 'Bad Request',
      message: expect.stringMatching(/not valid JSON/),
    });
    const poisoned = await post(t, w.session, `{"org_id":"${w.orgId}","__proto__":{"x":1}}`);
    expect(poisoned.status).toBe(400);
  });

  it('refuses a body in another media type (415), and an oversized one (413) before authentication', async () => {
    const w = await t.seed.world('owner');
    const plain = await post(t, w.session, JSON.stringify({ org_id: w.orgId }), 'text/plain');
    expect(plain.status).toBe(415);
    const big = await post(t, undefined, JSON.stringify({ org_id: w.orgId, name: 'x'.repeat(17_000) }));
    expect(big.status).toBe(413);
  });
});
