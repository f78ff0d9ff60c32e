import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForbiddenException } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/auth/api-key-format.js';
import { loadEnvironment } from '../../src/config/app-config.js';
import { defaultMaxConnections } from '../../src/http/socket-limits.js';
import { MetricsServer } from '../../src/metrics/metrics-server.js';
import { MetricsTokenGuard } from '../../src/metrics/metrics-token.guard.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { UsageService } from '../../src/usage/usage.service.js';
import { TestClock } from '../support/clock.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startLoggedApp } from '../support/log-capture.js';
import { rawRequest } from '../support/raw-http.js';
import { TEST_SESSION_SECRET } from '../support/seed.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/*
 * A hostile tenant with the lowest role tries to exhaust the service (issue 14): floods of mints,
 * unbounded lists, sockets that never read, bursts of bad tokens, proxy headers, hostile bodies,
 * refunds across an outage, session tokens without bounds. Every limit here answers a clear 4xx.
 */

/**
 * Seeds `count` key rows (many sharing a created_at, to exercise the id tie-break; at millisecond
 * precision, as the service's clock writes them) for a user in one statement (what 1,000 mints would leave behind, without the mints). */
async function seedKeys(t: TestApp, userId: string, orgId: string, count: number): Promise<void> {
  await t.db.pool.query(
    `INSERT INTO api_keys (user_id, org_id, name, lookup, last4, key_hash, scopes, created_at)
     SELECT $1, $2, 'seeded ' || i, substr(md5(random()::text || i), 1, 12), 'abcd', decode(md5(i::text), 'hex'),
            ARRAY['decisions:read'], date_trunc('milliseconds', now()) - (i % 250) * interval '1 second'
       FROM generate_series(1, $3) AS i`,
    [userId, orgId, count],
  );
}

describe('bounded work per caller', () => {
  let t: TestApp;
  let replica: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ env: { MAX_ACTIVE_KEYS_PER_USER_ORG: '5' } });
    replica = await startTestApp({ db: t.db, env: { MAX_ACTIVE_KEYS_PER_USER_ORG: '5' } });
  });
  afterAll(async () => {
    await replica?.close();
    await t?.close();
  });

  it('lets a flood of concurrent mints on two instances create exactly the cap of active keys, the rest 409 saying to revoke one', async () => {
    const w = await t.seed.world('viewer');
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? replica : t).api.post('/api-keys', w.session, { org_id: w.orgId, name: `flood ${i}` })),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(5);
    const refused = answers.filter((a) => a.status !== 201);
    expect(refused.every((a) => a.status === 409)).toBe(true);
    expect(refused[0].body.message).toMatch(/revoke one/);
    expect(refused[0].body.message).toMatch(/MAX_ACTIVE_KEYS_PER_USER_ORG/);
    const { rows } = await t.db.pool.query(`SELECT count(*)::int AS n FROM api_keys WHERE user_id = $1`, [w.userId]);
    expect(rows[0].n).toBe(5);
  });

  it('frees a place when a key is revoked or expires, and counts per org', async () => {
    const w = await t.seed.world('member');
    const minted = [];
    for (let i = 0; i < 5; i++) minted.push((await t.api.post('/api-keys', w.session, { org_id: w.orgId })).body);
    expect((await t.api.post('/api-keys', w.session, { org_id: w.orgId })).status).toBe(409);
    await t.api.delete(`/api-keys/${minted[0].id}`, w.session);
    expect((await t.api.post('/api-keys', w.session, { org_id: w.orgId })).status).toBe(201);
    await t.db.pool.query(`UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1`, [minted[1].id]);
    expect((await t.api.post('/api-keys', w.session, { org_id: w.orgId })).status).toBe(201);
    const other = await t.seed.org();
    await t.seed.member(other, w.userId, 'member');
    await t.seed.workspace(other, w.userId);
    expect((await t.api.post('/api-keys', w.session, { org_id: other })).status).toBe(201);
  });

  it('answers 429 with Retry-After once a user mints faster than MINT_RATE_LIMIT, and other users are unaffected', async () => {
    const limited = await startTestApp({ db: t.db, env: { MINT_RATE_LIMIT: '3' } });
    try {
      const w = await limited.seed.world('owner');
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push(await limited.api.post('/api-keys', w.session, { org_id: w.orgId }));
      expect(statuses.map((s) => s.status)).toEqual([201, 201, 201, 429]);
      expect(Number(statuses[3].headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(statuses[3].body.message).toMatch(/MINT_RATE_LIMIT/);
      const other = await limited.seed.world('owner');
      expect((await limited.api.post('/api-keys', other.session, { org_id: other.orgId })).status).toBe(201);
    } finally {
      await limited.close();
    }
  });

  it('pages through 1,000 keys with no duplicates and none missing while keys are minted and revoked concurrently', async () => {
    const w = await t.seed.world('owner');
    await seedKeys(t, w.userId, w.orgId, 1000);
    const { rows } = await t.db.pool.query<{ id: string }>(`SELECT id FROM api_keys WHERE user_id = $1`, [w.userId]);
    const seeded = new Set(rows.map((r) => r.id));
    // Mints go to a second org (the first is far over the cap of 5); revokes hit seeded keys.
    const other = await t.seed.org();
    await t.seed.member(other, w.userId, 'owner');
    await t.seed.workspace(other, w.userId);

    let walking = true;
    const minted: string[] = [];
    const churn = (async () => {
      const victims = [...seeded].slice(0, 200);
      for (let i = 0; walking && i < victims.length; i++) {
        await replica.api.delete(`/api-keys/${victims[i]}`, w.session);
        if (minted.length < 4) {
          const m = await replica.api.post('/api-keys', w.session, { org_id: other });
          if (m.status === 201) minted.push(m.body.id);
        }
      }
    })();

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const res = await t.api.get(`/api-keys?limit=37${cursor ? `&cursor=${cursor}` : ''}`, w.session);
      expect(res.status).toBe(200);
      expect(res.body.keys.length).toBeLessThanOrEqual(37);
      seen.push(...res.body.keys.map((k: { id: string }) => k.id));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor && pages < 100);
    walking = false;
    await churn;

    expect(new Set(seen).size, 'duplicates across pages').toBe(seen.length);
    expect([...seeded].filter((id) => !seen.includes(id)), 'seeded keys missing from the walk').toEqual([]);
    expect(seen.filter((id) => !seeded.has(id) && !minted.includes(id))).toEqual([]);
  });

  it('returns at most 100 keys with next_cursor when more exist, and no next_cursor on the last page', async () => {
    const w = await t.seed.world('viewer');
    await seedKeys(t, w.userId, w.orgId, 150);
    const first = await t.api.get('/api-keys', w.session);
    expect(first.body.keys).toHaveLength(100);
    expect(typeof first.body.next_cursor).toBe('string');
    const second = await t.api.get(`/api-keys?cursor=${first.body.next_cursor}`, w.session);
    expect(second.body.keys).toHaveLength(50);
    expect(second.body).not.toHaveProperty('next_cursor');
    const few = await t.seed.world('viewer');
    await seedKeys(t, few.userId, few.orgId, 3);
    const all = await t.api.get('/api-keys', few.session);
    expect(Object.keys(all.body)).toEqual(['keys']);
  });

  it('documents the paging parameters, next_cursor and the new 409 and 429 in the OpenAPI document', async () => {
    const doc = (await t.api.get('/openapi.json')).body;
    const list = doc.paths['/api-keys'].get;
    expect(list.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['cursor', 'limit', 'org_id', 'state']);
    expect(doc.components.schemas.ApiKeyList.properties).toHaveProperty('next_cursor');
    const mint = doc.paths['/api-keys'].post.responses;
    expect(mint['409'].description).toMatch(/MAX_ACTIVE_KEYS_PER_USER_ORG/);
    expect(mint['429'].description).toMatch(/MINT_RATE_LIMIT/);
    expect(mint['429'].headers).toHaveProperty('Retry-After');
  });

  it('filters by state and refuses bad paging parameters with a 400 naming them', async () => {
    const w = await t.seed.world('owner');
    const keys = [];
    for (let i = 0; i < 3; i++) keys.push((await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: `s${i}` })).body);
    await t.api.delete(`/api-keys/${keys[0].id}`, w.session);
    await t.db.pool.query(`UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1`, [keys[1].id]);
    const names = async (state: string) => (await t.api.get(`/api-keys?state=${state}`, w.session)).body.keys.map((k: { name: string }) => k.name);
    expect(await names('active')).toEqual(['s2']);
    expect(await names('revoked')).toEqual(['s0']);
    expect(await names('expired')).toEqual(['s1']);
    for (const [query, word] of [
      ['state=gone', 'state'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=ten', 'limit'],
      ['cursor=not-a-cursor', 'cursor'],
      ['org_id=nope', 'org_id'],
    ]) {
      const res = await t.api.get(`/api-keys?${query}`, w.session);
      expect(res.status, query).toBe(400);
      expect(res.body.message, query).toContain(word);
    }
  });
});

/** Polls `condition` every 50 ms until it holds or `limitMs` passes; returns whether it held. */
async function eventually(condition: () => Promise<boolean> | boolean, limitMs = 15_000): Promise<boolean> {
  const end = Date.now() + limitMs;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

function connections(t: TestApp): Promise<number> {
  return new Promise((resolve, reject) => t.app.getHttpServer().getConnections((error, n) => (error ? reject(error) : resolve(n))));
}

/** Opens `count` loopback sockets that send `bytes` and never read a byte of the answer. */
async function stalledClients(url: string, count: number, bytes: string): Promise<net.Socket[]> {
  const { port } = new URL(url);
  const sockets = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<net.Socket>((resolve) => {
          const s = net.connect({ port: Number(port), host: '127.0.0.1' }, () => {
            s.pause();
            s.write(bytes);
            resolve(s);
          });
          s.on('error', () => resolve(s));
        }),
    ),
  );
  return sockets;
}

describe('sockets are let go', () => {
  let t: TestApp;
  const held: net.Socket[] = [];

  beforeAll(async () => {
    t = await startTestApp({
      env: { HTTP_HEADERS_TIMEOUT_MS: '1500', HTTP_REQUEST_TIMEOUT_MS: '2000', HTTP_IDLE_TIMEOUT_MS: '2000', HTTP_KEEP_ALIVE_TIMEOUT_MS: '1000' },
    });
  });
  afterAll(async () => {
    for (const s of held) s.destroy();
    await t?.close();
  });

  it('serves a normal client while 300 clients never read, then destroys their sockets after the timeouts', async () => {
    let accepted = 0;
    t.app.getHttpServer().on('connection', () => accepted++);
    const bigAnswer = `GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n`.repeat(20); // pipelined: more than the buffers hold
    held.push(...(await stalledClients(t.url, 100, bigAnswer)));
    held.push(...(await stalledClients(t.url, 100, 'GET /health/live HTTP/1.1\r\nHost: x\r\n'))); // headers never end
    held.push(...(await stalledClients(t.url, 100, 'POST /api-keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{'))); // body never ends
    expect(await eventually(() => accepted >= 300), `accepted ${accepted} of 300`).toBe(true);

    const normal = await t.api.get('/health/live');
    expect(normal.status).toBe(200);

    // Destroyed, not half-closed: the server's own count of open sockets falls to (nearly) none
    // although not one of the 300 peers has closed its end.
    expect(await eventually(async () => (await connections(t)) <= 2), 'connections still open after the timeouts').toBe(true);
  });

  it('drops connections beyond HTTP_MAX_CONNECTIONS at accept and serves again once the stalled ones are gone', async () => {
    const capped = await startTestApp({
      db: t.db,
      env: { HTTP_MAX_CONNECTIONS: '20', HTTP_HEADERS_TIMEOUT_MS: '500', HTTP_REQUEST_TIMEOUT_MS: '800', HTTP_IDLE_TIMEOUT_MS: '1000' },
    });
    try {
      expect(capped.app.getHttpServer().maxConnections).toBe(20);
      const sockets = await stalledClients(capped.url, 60, 'GET /health/live HTTP/1.1\r\nHost: x\r\n');
      held.push(...sockets);
      expect(await connections(capped)).toBeLessThanOrEqual(20);
      expect(await eventually(async () => (await connections(capped)) === 0)).toBe(true);
      expect((await capped.api.get('/health/live')).status).toBe(200);
    } finally {
      await capped.close();
    }
  });

  it('defaults the connection cap below the descriptor limit', () => {
    expect(t.app.getHttpServer().maxConnections).toBe(defaultMaxConnections());
    const dir = mkdtempSync(join(tmpdir(), 'limits-'));
    const file = join(dir, 'limits');
    writeFileSync(file, 'Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 524288               files\n');
    expect(defaultMaxConnections(file)).toBe(768);
    expect(defaultMaxConnections(join(dir, 'missing'))).toBe(4096);
  });
});

describe('throttles that hold under concurrency and across instances', () => {
  let db: TestDatabase;
  const clock = new TestClock('2026-05-01T12:00:00Z');

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** A token of the key format with a valid checksum, so it is looked up: a real verification each. */
  const badKey = () => generateApiKey().key;

  it('lets at most the limit of 1,000 concurrent bad tokens from one address through to verification', async () => {
    const t = await startTestApp({ db, clock, env: { AUTH_FAILURE_LIMIT: '30' } });
    try {
      const answers = await Promise.all(Array.from({ length: 1000 }, (_, i) => t.api.get('/me', i % 2 ? badKey() : `not-a-jwt-${i}`)));
      const verified = answers.filter((a) => a.status === 401).length;
      expect(verified).toBeGreaterThan(0);
      expect(verified).toBeLessThanOrEqual(30);
      expect(answers.filter((a) => a.status !== 401).every((a) => a.status === 429 && a.headers.get('retry-after'))).toBe(true);
    } finally {
      await t.close();
    }
    clock.advance(60_000);
  });

  it('shares the count between two instances on one database, also under a concurrent burst on both', async () => {
    const a = await startTestApp({ db, clock, env: { AUTH_FAILURE_LIMIT: '10' } });
    const b = await startTestApp({ db, clock, env: { AUTH_FAILURE_LIMIT: '10' } });
    try {
      const burst = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? a : b).api.get('/me', badKey())));
      expect(burst.filter((r) => r.status === 401).length).toBeLessThanOrEqual(20);
      // The shared count is written behind the 401s; once it has landed both instances refuse.
      const { rows } = await db.pool.query(`SELECT max(points) AS points FROM auth_failure_counts`);
      expect(Number(rows[0].points)).toBeGreaterThanOrEqual(10);
      expect((await a.api.get('/me', badKey())).status).toBe(429);
      expect((await b.api.get('/me', badKey())).status).toBe(429);
      clock.advance(60_000);
      // Sequentially: what one instance used up, the other sees on the address's first request.
      for (let i = 0; i < 10; i++) expect((await a.api.get('/me', badKey())).status).toBe(401);
      await new Promise((r) => setTimeout(r, 200));
      expect((await b.api.get('/me', badKey())).status).toBe(429);
    } finally {
      await a.close();
      await b.close();
    }
    clock.advance(60_000);
  });

  it('takes the client address from the trusted hops only: addresses appended in front cannot steer it', async () => {
    const t = await startTestApp({ db, clock, env: { AUTH_FAILURE_LIMIT: '5', TRUST_PROXY: '1' } });
    try {
      // One proxy (the test's loopback peer) appends the real client; the client forges what precedes it.
      const statuses = [];
      for (let i = 0; i < 8; i++) {
        statuses.push((await t.api.get('/me', badKey(), { 'x-forwarded-for': `10.9.${i}.1, 192.0.2.${i}, 198.51.100.77` })).status);
      }
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
      expect((await t.api.get('/me', badKey(), { 'x-forwarded-for': '198.51.100.78' })).status, 'another real client').toBe(401);
    } finally {
      await t.close();
    }
  });

  it('keeps serving a credential that verified recently from an address while that address is throttled (one NAT, one office)', async () => {
    const t = await startTestApp({ db, clock, env: { AUTH_FAILURE_LIMIT: '5', TRUST_PROXY: '1' } });
    try {
      const office = { 'x-forwarded-for': '203.0.113.200' };
      const colleague = await t.seed.world('owner');
      const newcomer = await t.seed.world('owner');
      const key = (await t.api.post('/api-keys', colleague.session, { org_id: colleague.orgId })).body.key;
      expect((await t.api.get('/me', key, office)).status).toBe(200);
      expect((await t.api.get('/me', colleague.session, office)).status).toBe(200);
      for (let i = 0; i < 5; i++) expect((await t.api.get('/me', badKey(), office)).status).toBe(401);
      expect((await t.api.get('/me', badKey(), office)).status, 'the noisy client').toBe(429);
      expect((await t.api.get('/me', key, office)).status, 'a key that verified from the office').toBe(200);
      expect((await t.api.get('/me', colleague.session, office)).status, 'a session that verified from the office').toBe(200);
      expect((await t.api.get('/me', newcomer.session, office)).status, 'a credential never seen from the office').toBe(429);
      expect((await t.api.get('/me', key, { 'x-forwarded-for': '203.0.113.201' })).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});

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
    rawRequest(t.url, { method: 'POST', path: '/api-keys', headers: [['Authorization', `Bearer ${w.session}`], ['Content-Type', 'application/json']], body });

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
    const body = Buffer.concat([Buffer.from(`{"org_id":"${w.orgId}","name":"caf`), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    const res = await post(body);
    expect(res.status).toBe(400);
    expect((res.body as { message: string }).message).toMatch(/not valid UTF-8/);
    const { rows } = await t.db.pool.query(`SELECT count(*)::int AS n FROM api_keys`);
    expect(rows[0].n).toBe(0);
  });

  it('still checks the credential first: a deep body without a credential is a 401', async () => {
    const res = await rawRequest(t.url, { method: 'POST', path: '/api-keys', headers: [['Content-Type', 'application/json']], body: nested(100) });
    expect(res.status).toBe(401);
  });
});

describe('refunds that land', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    proxy = await TcpProxy.start(db.url);
    t = await startTestApp({ db: { ...db, url: proxy.urlFor(db.url) }, env: { DB_CONNECT_TIMEOUT_MS: '500', DB_STATEMENT_TIMEOUT_MS: '1000' } });
  });
  afterAll(async () => {
    await proxy.restore();
    await t?.close();
    await proxy?.close();
    await db?.drop();
  });

  const captures = async (orgId: string) =>
    (await db.pool.query<{ captures: number }>(`SELECT captures FROM usage_counters WHERE org_id = $1`, [orgId])).rows[0]?.captures ?? 0;

  it('keeps 10 refunds made while the database is cut, shows them in /metrics, and lands every one once it is back', async () => {
    const w = await t.seed.world('owner');
    const usage = t.app.get(UsageService);
    const charges = [];
    for (let i = 0; i < 10; i++) charges.push(await usage.charge(w.orgId, 'captures', 1));
    expect(await captures(w.orgId)).toBe(10);

    await proxy.refuse();
    for (const charge of charges) await usage.refundEventually(charge);
    const metrics = await t.app.get(MetricsService).render();
    expect(metrics).toMatch(/^usage_refunds_pending 1$/m); // ten refunds of one org, day and meter: one entry
    expect(await captures(w.orgId), 'nothing landed during the outage').toBe(10);

    await proxy.restore();
    expect(await eventually(async () => (await captures(w.orgId)) === 0), 'refunds landed after the outage').toBe(true);
    expect(await t.app.get(MetricsService).render()).toMatch(/^usage_refunds_pending 0$/m);
  });
});

describe('refunds flushed on shutdown', () => {
  it('lands a refund kept during an outage when the app is closed (SIGTERM), before the pool closes', async () => {
    const db = await createTestDatabase();
    const proxy = await TcpProxy.start(db.url);
    const t = await startTestApp({ db: { ...db, url: proxy.urlFor(db.url) }, env: { DB_CONNECT_TIMEOUT_MS: '500', DB_STATEMENT_TIMEOUT_MS: '1000' } });
    try {
      const w = await t.seed.world('owner');
      const usage = t.app.get(UsageService);
      const charge = await usage.charge(w.orgId, 'captures', 3);
      await proxy.refuse();
      await usage.refundEventually(charge);
      await proxy.restore();
      await t.app.close(); // what enableShutdownHooks runs on SIGTERM
      const { rows } = await db.pool.query(`SELECT captures FROM usage_counters WHERE org_id = $1`, [w.orgId]);
      expect(rows[0].captures).toBe(0);
    } finally {
      await proxy.close();
      await db.drop();
    }
  });
});

describe('session tokens with sane bounds', () => {
  let t: TestApp;
  let claims: Record<string, unknown>;
  const nowSeconds = () => Math.floor(Date.now() / 1000);
  const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
  /** Signs header and payload text exactly as given (jsonwebtoken cannot write 1e400). */
  const handSigned = (header: Record<string, unknown>, payloadText: string) => {
    const input = `${b64(header)}.${b64(payloadText)}`;
    return `${input}.${createHmac('sha256', TEST_SESSION_SECRET).update(input).digest('base64url')}`;
  };
  const expect401 = async (token: string, label: string) => {
    const res = await t.api.get('/me', token);
    expect(res.status, label).toBe(401);
    expect(res.headers.get('www-authenticate'), label).toMatch(/invalid_token/);
  };

  beforeAll(async () => {
    t = await startTestApp({ env: { SESSION_MAX_AGE: '3600' } });
    const w = await t.seed.world('owner');
    claims = { sub: w.userId, email: w.email };
  });
  afterAll(async () => t?.close());

  it('accepts a token within the maximum age, with and without iat (the control)', async () => {
    const iat = nowSeconds();
    expect((await t.api.get('/me', handSigned({ alg: 'HS256', typ: 'JWT' }, JSON.stringify({ ...claims, iat, exp: iat + 3600 })))).status).toBe(200);
    expect((await t.api.get('/me', handSigned({ alg: 'HS256', typ: 'JWT' }, JSON.stringify({ ...claims, exp: iat + 600 })))).status).toBe(200);
  });

  it('refuses an exp that is not finite, years away, or beyond SESSION_MAX_AGE from iat (401)', async () => {
    const iat = nowSeconds();
    const body = (rest: string) => `{"sub":"${claims.sub}","email":"${claims.email}",${rest}}`;
    await expect401(handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"iat":${iat},"exp":1e400`)), 'exp 1e400');
    await expect401(handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"exp":1e400`)), 'exp 1e400 without iat');
    await expect401(handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"iat":${iat},"exp":253402300799`)), 'exp in the year 9999');
    await expect401(handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"exp":253402300799`)), 'year 9999 without iat');
    await expect401(handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"iat":${iat},"exp":${iat + 3601}`)), 'one second over the maximum age');
    await expect401(handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"exp":${iat + 3700}`)), 'without iat, further than the maximum age from now');
    await expect401(handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"iat":253402300000,"exp":253402300799`)), 'an iat in the future cannot stretch the age');
    await expect401(handSigned({ alg: 'HS256', typ: 'JWT' }, body(`"iat":"yesterday","exp":${iat + 60}`)), 'a non-numeric iat');
  });

  it('refuses a token whose crit header names anything, as RFC 7515 requires for extensions we do not understand (401)', async () => {
    const payload = JSON.stringify({ ...claims, iat: nowSeconds(), exp: nowSeconds() + 600 });
    await expect401(handSigned({ alg: 'HS256', typ: 'JWT', crit: ['exp-policy'], 'exp-policy': 1 }, payload), 'unknown crit');
    await expect401(handSigned({ alg: 'HS256', typ: 'JWT', crit: [] }, payload), 'empty crit');
  });

  it('defaults the maximum session age to 24 hours', () => {
    expect(loadEnvironment({}).SESSION_MAX_AGE).toBe(86_400);
  });
});

describe('metrics and logs for operators', () => {
  it('serves /metrics on its own listener bound to loopback by default, rendered at most once a second', async () => {
    const t = await startTestApp({ env: { METRICS_PORT: '0', METRICS_CACHE_MS: '1000' } });
    try {
      const server = t.app.get(MetricsServer) as unknown as { server: import('node:http').Server };
      expect((server.server.address() as { address: string }).address).toBe('127.0.0.1');
      expect((await t.api.get('/metrics')).status, 'not on the API port').toBe(404);
      const metrics = t.app.get(MetricsService);
      expect(metrics.render(), 'a second scrape within the second reuses the render').toBe(metrics.render());
    } finally {
      await t.close();
    }
  });

  it('refuses /metrics on the API port to a client that is not loopback when no METRICS_TOKEN is set', () => {
    const guard = new MetricsTokenGuard({ allowLoopback: true });
    // `ip` is the client after the TRUST_PROXY rules (Fastify's request.ip).
    const ctx = (ip: string) => new ExecutionContextHost([{ headers: { 'x-forwarded-for': '127.0.0.1' }, ip }, { header() {} }]);
    expect(() => guard.canActivate(ctx('203.0.113.9'))).toThrow(ForbiddenException);
    expect(() => guard.canActivate(ctx('10.0.0.4'))).toThrow(/METRICS_TOKEN/);
    expect(guard.canActivate(ctx('127.0.0.1'))).toBe(true);
    expect(guard.canActivate(ctx('::1'))).toBe(true);
    expect(guard.canActivate(ctx('::ffff:127.0.0.1'))).toBe(true);
  });

  it('writes the client address, after the trust-proxy rules, on every request line', async () => {
    const t = await startLoggedApp({ LOG_FORMAT: 'json', LOG_LEVEL: 'info', TRUST_PROXY: '1' });
    try {
      const res = await t.api.get('/me', 'nope', { 'x-forwarded-for': '192.0.2.1, 198.51.100.23' });
      expect(res.status).toBe(401);
      const id = res.headers.get('x-request-id');
      expect(await eventually(() => t.logs.records().some((r) => r.request_id === id))).toBe(true);
      expect(t.logs.records().find((r) => r.request_id === id)).toMatchObject({ client: '198.51.100.23', status: 401 });
    } finally {
      await t.close();
    }
  });
});
