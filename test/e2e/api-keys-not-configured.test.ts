import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../support/http.js';
import { insertKeyRow, NOWHERE } from '../support/factories.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

type Call = (api: ApiClient, token: string | undefined, orgId: string) => ReturnType<ApiClient['get']>;

const ENDPOINTS: Array<[string, Call]> = [
  ['POST /api-keys', (api, token, orgId) => api.post('/api-keys', token, { org_id: orgId })],
  ['GET /api-keys', (api, token) => api.get('/api-keys', token)],
  ['DELETE /api-keys/{keyID}', (api, token) => api.delete(`/api-keys/${NOWHERE}`, token)],
];

describe('a deployment without API_KEY_SECRET', () => {
  let bare: TestApp;

  // One app per file: @nestjs/passport registers strategies on the process-wide passport
  // singleton, so a second app in the same process would authenticate with the first's settings.
  beforeAll(async () => {
    bare = await startTestApp({ env: { API_KEY_SECRET: undefined } });
  });
  afterAll(async () => bare?.close());

  it.each(ENDPOINTS)('answers %s with 501 to a valid session', async (_, call) => {
    const w = await bare.seed.world('owner');
    const res = await call(bare.api, w.session, w.orgId);
    expect(res.status).toBe(501);
    expect(res.body).toEqual({
      statusCode: 501,
      error: 'Not Implemented',
      message: expect.stringMatching(/not configured/),
    });
  });

  it.each(ENDPOINTS)('authenticates %s first: no credential or a bad session is 401, not 501', async (_, call) => {
    const w = await bare.seed.world('owner');
    const none = await call(bare.api, undefined, w.orgId);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    const forged = bare.seed.session(w.userId, w.email, { secret: 'another-secret-another-secret-another-secret' });
    expect((await call(bare.api, forged, w.orgId)).status).toBe(401);
  });

  it('answers 501 before looking at the request: an invalid body, query or id does not turn it into a 400', async () => {
    const w = await bare.seed.world('owner');
    expect((await bare.api.post('/api-keys', w.session, { org_id: 'nope', extra: 1 })).status).toBe(501);
    expect((await bare.api.get('/api-keys?org_id=nope', w.session)).status).toBe(501);
    expect((await bare.api.delete('/api-keys/nope', w.session)).status).toBe(501);
  });

  it('stores nothing when it refuses a mint', async () => {
    const w = await bare.seed.world('owner');
    await bare.api.post('/api-keys', w.session, { org_id: w.orgId });
    const { rows } = await bare.db.pool.query(`SELECT count(*)::int AS n FROM api_keys WHERE user_id = $1`, [w.userId]);
    expect(rows[0].n).toBe(0);
  });

  it('refuses API keys (401), even one whose row a configured deployment wrote into the same database', async () => {
    const w = await bare.seed.world('owner');
    const generated = await insertKeyRow(bare.db.pool, { userId: w.userId, orgId: w.orgId });
    const me = await bare.api.get('/me', generated.key);
    expect(me.status).toBe(401);
    expect(me.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect((await bare.api.get('/usage', generated.key)).status).toBe(401);
    expect((await bare.api.get('/api-keys', generated.key)).status).toBe(401);
  });

  it('still serves sessions on the routes that do not need keys', async () => {
    const w = await bare.seed.world('owner');
    expect((await bare.api.get('/me', w.session)).status).toBe(200);
  });
});
