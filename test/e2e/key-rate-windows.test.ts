import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { TestClock } from '../support/clock.js';

/**
 * Rate windows as sliding-window counters shared by the instances, on a test clock that stands
 * still: a burst gets the whole window, on one instance or across three, never more.
 */
describe('bursts on a rate window', () => {
  // 100 ms into a fixed window of one second.
  const clock = new TestClock('2026-04-01T10:00:00.100Z');
  let a: TestApp;
  let b: TestApp;
  let c: TestApp;
  beforeAll(async () => {
    a = await startTestApp({ clock });
    b = await startTestApp({ db: a.db, clock });
    c = await startTestApp({ db: a.db, clock });
  });
  afterAll(async () => {
    await c?.close();
    await b?.close();
    await a?.close();
  });

  async function keyLimitedTo(limit: number) {
    const w = await a.seed.world('owner');
    const minted = await a.api.post('/api-keys', w.session, {
      org_id: w.orgId,
      rate_limits: [{ name: 'default', limit, window_seconds: 1 }],
    });
    expect(minted.status).toBe(201);
    return minted.body.key as string;
  }

  it('admits 5 of 12 concurrent requests on one instance with a key limited to 5 a second', async () => {
    const key = await keyLimitedTo(5);
    const answers = await Promise.all(Array.from({ length: 12 }, () => a.api.get('/me', key)));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(5);
    const refused = answers.filter((r) => r.status !== 200);
    expect(refused.map((r) => r.status)).toEqual(Array.from({ length: 7 }, () => 429));
    for (const r of refused) {
      expect(r.body.budget).toBe('key_window:default');
      // 5 counted at 10:00:00.100: one more fits at 10:00:01.200, so a retry after 2 seconds succeeds.
      expect(r.headers.get('retry-after')).toBe('2');
      expect(r.headers.get('ratelimit')).toBe('"default";r=0;t=2');
    }
  });

  it('gives 30 concurrent requests across three instances the 10 of a key limited to 10 a second', async () => {
    const key = await keyLimitedTo(10);
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => [a, b, c][i % 3]!.api.get('/me', key)));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(10);
    expect(answers.filter((r) => r.status === 429)).toHaveLength(20);
  });
});

describe('plan default windows', () => {
  // The start of an hour: the plan's window of 3600 s begins.
  const clock = new TestClock('2026-04-01T10:00:00.000Z');
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      clock,
      env: { PLAN_RATE_LIMITS: '{"free":[{"name":"default","limit":20,"window_seconds":3600}]}' },
    });
  });
  const twenty = (key: string) => Promise.all(Array.from({ length: 20 }, () => t.api.get('/me', key)));
  afterAll(async () => t?.close());

  it('limit a key of a free org that has no windows of its own', async () => {
    const w = await t.seed.world('owner');
    const plain = await t.api.post('/api-keys', w.session, { org_id: w.orgId });
    const first = await twenty(plain.body.key);
    expect(first.map((r) => r.status)).toEqual(Array.from({ length: 20 }, () => 200));
    expect(first[0]!.headers.get('ratelimit-policy')).toBe('"default";q=20;w=3600');
    const refused = await t.api.get('/me', plain.body.key);
    expect(refused.status).toBe(429);
    expect(refused.body.budget).toBe('plan_window:default');
    // In the next hour the 20 weigh 20 x (1 - elapsed / 3600 s): one more fits at 11:03:00.
    expect(refused.headers.get('retry-after')).toBe('3780');
  });

  it('hold for a key with rate_limits: [] and for one with a larger window of its own', async () => {
    const w = await t.seed.world('owner');
    const none = await t.api.post('/api-keys', w.session, { org_id: w.orgId, rate_limits: [] });
    const larger = await t.api.post('/api-keys', w.session, {
      org_id: w.orgId,
      rate_limits: [{ name: 'default', limit: 1000, window_seconds: 1 }],
    });
    expect([none.status, larger.status]).toEqual([201, 201]);
    for (const key of [none.body.key as string, larger.body.key as string]) {
      expect((await twenty(key)).every((r) => r.status === 200)).toBe(true);
      const refused = await t.api.get('/me', key);
      expect(refused.status).toBe(429);
      expect(refused.body.budget).toBe('plan_window:default');
    }
    const both = await t.api.get('/me', larger.body.key);
    expect(both.headers.get('ratelimit-policy')).toBe('"default";q=1000;w=1, "plan/default";q=20;w=3600');
  });
});
