import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../support/raw-http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/*
 * A hostile tenant with the lowest role tries to exhaust the service; this file: hostile bodies: nesting and encoding limits answer 400 before any work.
 */

describe('input limits before work', () => {
  let t: TestApp;
  let w: { orgId: string; session: string };

  beforeAll(async () => {
    t = await startTestApp();
    w = await t.seed.world('viewer');
  });
  afterAll(async () => t?.close());

  /** `levels` nested arrays around a 1; inside the body's object, the body is one level deeper. */
  const nested = (levels: number) => `${'['.repeat(levels)}1${']'.repeat(levels)}`;
  const post = (body: string | Buffer) =>
    rawRequest(t.url, {
      method: 'POST',
      path: '/api-keys',
      headers: [
        ['Authorization', `Bearer ${w.session}`],
        ['Content-Type', 'application/json'],
      ],
      body,
    });

  it('answers 400 naming the limit for JSON nested deeper than 32 levels, however deep (never a 500)', async () => {
    for (const depth of [33, 2_000, 5_000]) {
      const res = await post(`{"org_id":"${w.orgId}","name":${nested(depth - 1)}}`);
      expect(res.status, `depth ${depth}`).toBe(400);
      expect((res.body as { message: string }).message).toMatch(/deeper than 32 levels/);
    }
    const atLimit = await post(`{"org_id":"${w.orgId}","name":${nested(31)}}`);
    expect(atLimit.status).toBe(400);
    expect((atLimit.body as { message: string }).message, 'parsed, then validated').toBe('name must be a string');
    const brackets = await post(`{"org_id":"${w.orgId}","name":"${'['.repeat(5_000)}"}`);
    expect(brackets.status, 'brackets inside a string are not nesting').toBe(400);
    expect((brackets.body as { message: string }).message).toMatch(/name must be at most 100/);
  });

  it('answers 400 for a body that is not valid UTF-8 instead of storing U+FFFD', async () => {
    const body = Buffer.concat([
      Buffer.from(`{"org_id":"${w.orgId}","name":"caf`),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}'),
    ]);
    const res = await post(body);
    expect(res.status).toBe(400);
    expect((res.body as { message: string }).message).toMatch(/not valid UTF-8/);
    const { rows } = await t.db.pool.query(`SELECT count(*)::int AS n FROM api_keys`);
    expect(rows[0].n).toBe(0);
  });

  it('still checks the credential first: a deep body without a credential is a 401', async () => {
    const res = await rawRequest(t.url, {
      method: 'POST',
      path: '/api-keys',
      headers: [['Content-Type', 'application/json']],
      body: nested(100),
    });
    expect(res.status).toBe(401);
  });
});
