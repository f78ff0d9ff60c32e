import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Seeder } from '../support/seed.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * Two differently configured apps in one process (a host's test suite, or two module
 * instances) must not share strategies: each verifies with its own secrets.
 */
describe('two apps in one process', () => {
  let a: TestApp;
  let b: TestApp;
  const otherSecret = 'another-session-secret-0123456789abcdef-xyz';

  beforeAll(async () => {
    a = await startTestApp();
    b = await startTestApp({ env: { SESSION_JWT_SECRET: otherSecret, API_KEY_SECRET: undefined } });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('each verifies sessions with its own secret, whichever started last', async () => {
    const wa = await a.seed.world();
    const sb = new Seeder(b.db.pool, otherSecret);
    const wb = await sb.world();
    expect((await a.api.get('/me', wa.session)).status).toBe(200);
    expect((await b.api.get('/me', wb.session)).status).toBe(200);
    expect((await a.api.get('/me', a.seed.session(wa.userId, wa.email, { secret: otherSecret }))).status).toBe(401);
    expect((await b.api.get('/me', sb.session(wb.userId, wb.email, { secret: undefined }))).status).toBe(200);
  });

  it('keys configured in one are not switched off by the other', async () => {
    const w = await a.seed.world();
    const minted = await a.api.post('/api-keys', w.session, { org_id: w.orgId });
    expect(minted.status).toBe(201);
    expect((await a.api.get('/me', minted.body.key)).status).toBe(200);
    expect(
      (await b.api.post('/api-keys', (await new Seeder(b.db.pool, otherSecret).world()).session, { org_id: w.orgId }))
        .status,
    ).toBe(501);
  });
});
