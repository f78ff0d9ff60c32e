import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { TestClock } from '../support/clock.js';

/**
 * Per-key settings on three instances sharing one PostgreSQL: disabled keys, networks, rate
 * windows and credits, and the PATCH routes' bad input.
 */
describe('key controls across three instances', () => {
  let a: TestApp;
  let b: TestApp;
  let c: TestApp;
  beforeAll(async () => {
    a = await startTestApp();
    b = await startTestApp({ db: a.db });
    c = await startTestApp({ db: a.db });
  });
  afterAll(async () => {
    await c?.close();
    await b?.close();
    await a?.close();
  });

  async function mint() {
    const w = await a.seed.world('owner');
    const minted = await a.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'controls' });
    expect(minted.status).toBe(201);
    return { ...w, key: minted.body.key as string, keyId: minted.body.id as string };
  }
  const patch = (session: string, keyId: string, body: unknown) =>
    a.api.request('PATCH', `/api-keys/${keyId}`, { token: session, body });

  it('refuses bad settings with a 400 naming the field, and another user’s key with a 404', async () => {
    const w = await mint();
    const cases: Array<[unknown, string]> = [
      [{ rate_limits: [{ name: 'd', limit: 5, window_seconds: 86_401 }] }, 'rate_limits[0].window_seconds'],
      [
        { rate_limits: Array.from({ length: 6 }, (_, i) => ({ name: `w${i}`, limit: 1, window_seconds: 1 })) },
        'rate_limits',
      ],
      [{ rate_limits: [{ name: 'd', limit: 0, window_seconds: 1 }] }, 'rate_limits[0].limit'],
      [{ rate_limits: [{ name: 'd', limit: 1e12, window_seconds: 1 }] }, 'rate_limits[0].limit'],
      [{ allowed_cidrs: ['10.0.0.0/33'] }, 'allowed_cidrs[0]'],
      [{ allowed_cidrs: ['nonsense'] }, 'allowed_cidrs[0]'],
      [{ allowed_cidrs: ['0.0.0.0/1'] }, 'allowed_cidrs[0]'],
      [{ metadata: { big: 'x'.repeat(1100) } }, 'metadata'],
      [{ metadata: { a: { b: { c: { d: { e: 1 } } } } } }, 'metadata'],
      [{ metadata: [1] }, 'metadata'],
      [{ metadata: { a: '\u0000' } }, 'metadata'],
      [{ metadata: { a: '\ud800' } }, 'metadata'],
      [{ metadata: { nested: { 'k\u0000': ['x'] } } }, 'metadata'],
      [{ allowed_cidrs: ['fe80::%eth0/64'] }, 'allowed_cidrs[0]'],
      [{ credits: { remaining: -1 } }, 'credits.remaining'],
      [{ credits: { remaining: 5, refill: { amount: 5 } } }, 'credits.refill.interval'],
      [{ enabled: 'no' }, 'enabled'],
      [{}, 'at least one'],
    ];
    for (const [body, field] of cases) {
      const res = await patch(w.session, w.keyId, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.message).toContain(field);
    }
    expect((await patch(w.session, w.keyId, { allowed_cidrs: ['0.0.0.0/0', '::/0'] })).status).toBe(200);
    // A mint with text jsonb cannot store is refused alone; mints beside it still succeed.
    const mints = await Promise.all(
      [{ a: '\u0000' }, { ok: 'yes' }, { b: '\udc00' }, { ok: 'too' }].map((metadata) =>
        a.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'meta', metadata }),
      ),
    );
    expect(mints.map((r) => r.status)).toEqual([400, 201, 400, 201]);
    expect(mints[0]!.body.message).toContain('metadata');
    const other = await a.seed.world('owner');
    expect((await patch(other.session, w.keyId, { enabled: false })).status).toBe(404);
    expect((await a.api.get('/me', w.key)).status).toBe(200);
  });

  it('refuses a disabled key on every instance as soon as the PATCH answers, and accepts it again once enabled', async () => {
    const w = await mint();
    for (const t of [a, b, c]) expect((await t.api.get('/me', w.key)).status).toBe(200);
    const off = await patch(w.session, w.keyId, { enabled: false });
    expect(off.status).toBe(200);
    expect(off.body.enabled).toBe(false);
    for (const t of [a, b, c]) expect((await t.api.get('/me', w.key)).status).toBe(401);
    const listed = await a.api.get('/api-keys?state=disabled', w.session);
    expect(listed.body.keys.map((k: { id: string }) => k.id)).toEqual([w.keyId]);
    expect((await a.api.get('/api-keys?state=active', w.session)).body.keys).toEqual([]);
    const on = await patch(w.session, w.keyId, { enabled: true });
    expect(on.body.enabled).toBeUndefined();
    for (const t of [a, b, c]) expect((await t.api.get('/me', w.key)).status).toBe(200);
    const audit = await a.db.pool.query(
      `SELECT count(*)::int AS n FROM audit_events WHERE action = 'api_key.updated' AND target_id = $1`,
      [w.keyId],
    );
    expect(audit.rows[0].n).toBe(2);
  });

  it('refuses a request from outside allowed_cidrs with 403 and spends nothing', async () => {
    const w = await mint();
    expect(
      (await patch(w.session, w.keyId, { allowed_cidrs: ['203.0.113.0/24'], credits: { remaining: 3 } })).status,
    ).toBe(200);
    const refused = await b.api.get('/me', w.key);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toContain('allowed_cidrs');
    expect((await patch(w.session, w.keyId, { allowed_cidrs: ['127.0.0.0/8', '::1/128'] })).status).toBe(200);
    expect((await b.api.get('/me', w.key)).status).toBe(200);
  });

  it('gives a key with 100 credits exactly 100 successes across the instances under concurrent load', async () => {
    const w = await mint();
    expect((await patch(w.session, w.keyId, { credits: { remaining: 100 } })).status).toBe(200);
    const statuses = await Promise.all(
      Array.from({ length: 6 }, async (_, lane) => {
        const api = [a, b, c][lane % 3]!.api;
        const seen: number[] = [];
        for (let i = 0; i < 40; i++) seen.push((await api.get('/me', w.key)).status);
        return seen;
      }),
    );
    const all = statuses.flat();
    expect(all.filter((s) => s === 200)).toHaveLength(100);
    expect(new Set(all.filter((s) => s !== 200))).toEqual(new Set([429]));
    const spent = await a.api.get('/me', w.key);
    expect(spent.status).toBe(429);
    expect(spent.body.message).toContain('credits');
    const { rows } = await a.db.pool.query(`SELECT credits_remaining::int AS n FROM api_keys WHERE id = $1`, [w.keyId]);
    expect(rows[0].n).toBe(0);
  });

  it('gives 20 concurrent requests on one instance every one of 7 credits, exactly, and the record then shows 0', async () => {
    const w = await mint();
    expect((await patch(w.session, w.keyId, { credits: { remaining: 7 } })).status).toBe(200);
    const statuses = await Promise.all(Array.from({ length: 20 }, () => a.api.get('/me', w.key).then((r) => r.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(7);
    expect(statuses.filter((s) => s === 429)).toHaveLength(13);
    const keys = await a.api.get('/api-keys', w.session);
    const record = (keys.body.keys as Array<{ id: string; credits: { remaining: number } }>).find(
      (k) => k.id === w.keyId,
    );
    expect(record!.credits.remaining).toBe(0);
  });

  it('holds a key at 50 requests per second to at most 50 in each second, 225..255 over 5 s, with RateLimit fields', async () => {
    const w = await mint();
    expect(
      (await patch(w.session, w.keyId, { rate_limits: [{ name: 'default', limit: 50, window_seconds: 1 }] })).status,
    ).toBe(200);
    const first = await b.api.get('/me', w.key);
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-policy')).toBe('"default";q=50;w=1');
    expect(first.headers.get('ratelimit')).toMatch(/^"default";r=\d+;t=\d+$/);
    // Measure over five fixed windows: from the start of a second (windows are aligned to multiples of their length).
    await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000)));
    const end = Date.now() + 5000;
    let ok = 0;
    let refused = 0;
    let limited: { status: number; headers: Headers } | null = null;
    await Promise.all(
      Array.from({ length: 9 }, async (_, lane) => {
        const api = [a, b, c][lane % 3]!.api;
        while (Date.now() < end) {
          const res = await api.get('/me', w.key);
          if (res.status === 200) ok++;
          else if (res.status === 429) {
            limited = res;
            refused++;
          } else throw new Error(`unexpected ${res.status}`);
        }
      }),
    );
    // The key asked for more than its limit all along.
    expect(refused, `${ok} admitted`).toBeGreaterThan(ok);
    expect(ok).toBeGreaterThanOrEqual(225);
    // 50 in each of the 5 fixed windows; at the next one's start the 50 just counted weigh in full.
    expect(ok).toBeLessThanOrEqual(255);
    expect(limited).not.toBeNull();
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited!.headers.get('ratelimit-policy')).toBe('"default";q=50;w=1');
  });

  it('takes the settings at mint, refusing bad ones with a 400 that names the field and writing nothing', async () => {
    const w = await a.seed.world('owner');
    const bad = await a.api.post('/api-keys', w.session, {
      org_id: w.orgId,
      credits: { remaining: 1, refill: { amount: 2 } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain('credits.refill.interval');
    expect((await a.api.get('/api-keys', w.session)).body.keys).toEqual([]);
    const minted = await a.api.post('/api-keys', w.session, {
      org_id: w.orgId,
      enabled: false,
      rate_limits: [{ name: 'default', limit: 1000, window_seconds: 60 }],
      credits: { remaining: 2 },
      allowed_cidrs: ['127.0.0.0/8', '::1/128'],
      metadata: { partner: 'acme' },
    });
    expect(minted.status).toBe(201);
    expect(minted.body).toMatchObject({
      enabled: false,
      credits: { remaining: 2 },
      allowed_cidrs: ['127.0.0.0/8', '::1/128'],
      metadata: { partner: 'acme' },
    });
    expect((await b.api.get('/me', minted.body.key)).status).toBe(401);
    expect((await patch(w.session, minted.body.id, { enabled: true })).status).toBe(200);
    expect((await b.api.get('/me', minted.body.key)).status).toBe(200);
    expect((await c.api.get('/me', minted.body.key)).status).toBe(200);
    expect((await a.api.get('/me', minted.body.key)).status).toBe(429);
  });

  it('keeps metadata off GET /me and shows the settings on the key record', async () => {
    const w = await mint();
    const res = await patch(w.session, w.keyId, { metadata: { team: 'batch' }, name: 'renamed' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'renamed', metadata: { team: 'batch' } });
    const me = await c.api.get('/me', w.key);
    expect(JSON.stringify(me.body)).not.toContain('batch');
    const list = await a.api.get('/api-keys', w.session);
    expect(list.body.keys[0].metadata).toEqual({ team: 'batch' });
  });
});

describe('credits refill at the boundary', () => {
  const clock = new TestClock('2026-03-31T23:59:58Z');
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ clock });
  });
  afterAll(async () => t?.close());

  it('refuses a spent key until the daily refill, then serves the refilled amount', async () => {
    const w = await t.seed.world('owner');
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId });
    const res = await t.api.request('PATCH', `/api-keys/${minted.body.id}`, {
      token: w.session,
      body: { credits: { remaining: 2, refill: { amount: 3, interval: 'daily' } } },
    });
    expect(res.status).toBe(200);
    expect(res.body.credits).toEqual({
      remaining: 2,
      refill: { amount: 3, interval: 'daily' },
      next_refill_at: '2026-04-01T00:00:00.000Z',
    });
    const key = minted.body.key as string;
    expect((await t.api.get('/me', key)).status).toBe(200);
    expect((await t.api.get('/me', key)).status).toBe(200);
    const spent = await t.api.get('/me', key);
    expect(spent.status).toBe(429);
    expect(spent.headers.get('retry-after')).toBe('2');
    clock.set('2026-04-01T00:00:00Z');
    const after = await Promise.all([1, 2, 3, 4].map(() => t.api.get('/me', key)));
    expect(after.map((r) => r.status).sort()).toEqual([200, 200, 200, 429]);
  });
});
