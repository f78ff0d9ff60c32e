import { BadRequestException, Body, Controller, ParseIntPipe, Post, Query } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CurrentPrincipal, RequireScopes } from '../../src/auth/auth.decorators.js';
import type { Principal } from '../../src/auth/principal.js';
import { parsePlanLimits } from '../../src/common/plan-limits.js';
import { Charges } from '../../src/usage/charges.decorator.js';
import { UsageService } from '../../src/usage/usage.service.js';
import { startChargingHost, type ChargingHost } from '../support/charging-host.js';
import { TestClock } from '../support/clock.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ApiClient } from '../support/http.js';
import { insertKeyRow } from '../support/factories.js';
import { Seeder } from '../support/seed.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const REPORT_FIELDS = ['breakdown', 'captures', 'imports', 'mcp_queries', 'meters', 'plan', 'resets_at'];
const NOW = '2031-03-14T15:09:26.535Z';
const NEXT_MIDNIGHT = '2031-03-15T00:00:00.000Z';

async function counters(pool: TestDatabase['pool'], orgId: string) {
  const { rows } = await pool.query(
    `SELECT day::text, asks, retrieves, imports, captures FROM usage_counters WHERE org_id = $1 ORDER BY day`,
    [orgId],
  );
  return rows;
}

describe('GET /usage', () => {
  let t: TestApp;
  let clock: TestClock;
  let usage: UsageService;

  beforeAll(async () => {
    clock = new TestClock(NOW);
    t = await startTestApp({ clock });
    usage = t.app.get(UsageService);
  });
  beforeEach(() => clock.set(NOW));
  afterAll(async () => t?.close());

  async function mint(session: string, orgId: string, scopes?: string[]): Promise<string> {
    const res = await t.api.post('/api-keys', session, { org_id: orgId, ...(scopes ? { scopes } : {}) });
    expect(res.status).toBe(201);
    return res.body.key;
  }

  it('reports the plan, the wallet with its breakdown, imports, captures, the next UTC midnight and every meter by name, and no other field', async () => {
    const w = await t.seed.world('owner', 'free');
    const key = await mint(w.session, w.orgId);
    await usage.charge(w.orgId, 'asks', 3);
    await usage.charge(w.orgId, 'retrieves', 2);
    await usage.charge(w.orgId, 'imports', 1);
    await usage.charge(w.orgId, 'captures', 4);

    const res = await t.api.get('/usage', key);

    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(REPORT_FIELDS);
    expect(res.body).toEqual({
      plan: 'free',
      mcp_queries: { used: 5, limit: 100 },
      breakdown: { asks: 3, retrieves: 2 },
      imports: { used: 1, limit: 10 },
      captures: { used: 4, limit: 100 },
      resets_at: NEXT_MIDNIGHT,
      meters: {
        asks: { used: 3, limit: 100 },
        retrieves: { used: 2, limit: 100 },
        imports: { used: 1, limit: 10 },
        captures: { used: 4, limit: 100 },
      },
    });
  });

  it('reports a pro org’s unlimited wallet as JSON null and its higher limits', async () => {
    const w = await t.seed.world('owner', 'pro');
    const key = await mint(w.session, w.orgId);

    const res = await t.api.get('/usage', key);

    expect(res.body).toMatchObject({
      plan: 'pro',
      mcp_queries: { used: 0, limit: null },
      imports: { used: 0, limit: 1000 },
      captures: { used: 0, limit: 10000 },
    });
    expect(res.text).toContain('"mcp_queries":{"used":0,"limit":null}');
  });

  it('follows the org’s plan as it changes', async () => {
    const w = await t.seed.world('owner', 'free');
    const key = await mint(w.session, w.orgId);

    await t.db.pool.query(`UPDATE orgs SET plan = 'pro' WHERE id = $1`, [w.orgId]);
    const res = await t.api.get('/usage', key);

    expect(res.body).toMatchObject({ plan: 'pro', mcp_queries: { limit: null } });
  });

  it('gives a session the same report as a key of the same org', async () => {
    const w = await t.seed.world('viewer', 'free');
    const key = await mint(w.session, w.orgId);
    await usage.charge(w.orgId, 'retrieves', 7);

    const bySession = await t.api.get('/usage', w.session);
    const byKey = await t.api.get('/usage', key);

    expect(bySession.status).toBe(200);
    expect(bySession.body).toEqual(byKey.body);
    expect(bySession.body.breakdown).toEqual({ asks: 0, retrieves: 7 });
  });

  it('reports the org a session names with X-Org-Id, and only that org', async () => {
    const orgA = await t.seed.org('free');
    const orgB = await t.seed.org('pro');
    const user = await t.seed.user();
    await t.seed.member(orgA, user.id, 'owner');
    await t.seed.member(orgB, user.id, 'member');
    await usage.charge(orgA, 'asks', 9);
    await usage.charge(orgB, 'imports', 2);

    const res = await t.api.get('/usage', t.seed.session(user.id, user.email), { 'x-org-id': orgB });

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ plan: 'pro', mcp_queries: { used: 0 }, imports: { used: 2, limit: 1000 } });
  });

  it('answers 400 naming X-Org-Id for a session whose org cannot be resolved', async () => {
    const user = await t.seed.user();
    await t.seed.member(await t.seed.org(), user.id, 'owner');
    await t.seed.member(await t.seed.org(), user.id, 'owner');

    const res = await t.api.get('/usage', t.seed.session(user.id, user.email));

    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    expect(res.body.message).toContain('X-Org-Id');
  });

  it('answers 404 for a session naming an org the user is not in', async () => {
    const w = await t.seed.world('owner');
    const foreign = await t.seed.org();

    const res = await t.api.get('/usage', w.session, { 'x-org-id': foreign });

    expect(res.status).toBe(404);
  });

  it('answers 403 to a key without decisions:read', async () => {
    const w = await t.seed.world('member');
    const key = (await insertKeyRow(t.db.pool, { userId: w.userId, orgId: w.orgId, scopes: ['decisions:write'] })).key;
    expect((await t.api.get('/me', key)).status).toBe(200);

    const res = await t.api.get('/usage', key);

    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ statusCode: 403, error: 'Forbidden' });
    expect(res.body.message).toContain('decisions:read');
  });

  it('answers 401 with WWW-Authenticate: Bearer when no credential is sent', async () => {
    const res = await t.api.get('/usage');

    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('never charges: ten reads, by key and by session, leave every counter as it was', async () => {
    const w = await t.seed.world('owner');
    const key = await mint(w.session, w.orgId);
    await usage.charge(w.orgId, 'asks', 4);
    await usage.charge(w.orgId, 'captures', 1);
    await usage.settle();
    const before = await counters(t.db.pool, w.orgId);

    const reports = [];
    for (let i = 0; i < 10; i++) reports.push((await t.api.get('/usage', i % 2 ? key : w.session)).body);

    expect(await counters(t.db.pool, w.orgId)).toEqual(before);
    for (const report of reports) {
      expect(report).toMatchObject({
        mcp_queries: { used: 4 },
        breakdown: { asks: 4, retrieves: 0 },
        imports: { used: 0 },
        captures: { used: 1 },
      });
    }
  });

  it('creates no counter row for an org that is only read', async () => {
    const w = await t.seed.world('owner');

    for (let i = 0; i < 3; i++) expect((await t.api.get('/usage', w.session)).status).toBe(200);

    expect(await counters(t.db.pool, w.orgId)).toEqual([]);
  });

  it('moves resets_at and starts from zero once the clock passes UTC midnight', async () => {
    const w = await t.seed.world('owner');
    const key = await mint(w.session, w.orgId);
    clock.set('2031-03-14T23:59:59.999Z');
    await usage.charge(w.orgId, 'asks', 5);
    const before = await t.api.get('/usage', key);

    clock.set('2031-03-15T00:00:00.000Z');
    const after = await t.api.get('/usage', key);

    expect(before.body).toMatchObject({ mcp_queries: { used: 5 }, resets_at: '2031-03-15T00:00:00.000Z' });
    expect(after.body).toMatchObject({ mcp_queries: { used: 0 }, resets_at: '2031-03-16T00:00:00.000Z' });
  });
});

describe('plan limits from configuration', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      env: { PLAN_LIMITS: JSON.stringify({ free: { wallet: 2, imports: null }, pro: { captures: 5 } }) },
      clock: new TestClock(NOW),
    });
  });
  afterAll(async () => t?.close());

  it('reports the configured limits, keeping the defaults for meters it does not name', async () => {
    const free = await t.seed.world('owner', 'free');
    const pro = await t.seed.world('owner', 'pro');

    const freeReport = await t.api.get('/usage', free.session);
    const proReport = await t.api.get('/usage', pro.session);

    expect(freeReport.body).toMatchObject({
      mcp_queries: { limit: 2 },
      imports: { limit: null },
      captures: { limit: 100 },
    });
    expect(proReport.body).toMatchObject({
      mcp_queries: { limit: null },
      imports: { limit: 1000 },
      captures: { limit: 5 },
    });
  });

  it('enforces the configured limits when charging', async () => {
    const w = await t.seed.world('owner', 'free');
    const usage = t.app.get(UsageService);

    await usage.charge(w.orgId, 'asks', 2);
    await expect(usage.charge(w.orgId, 'retrieves', 1)).rejects.toThrow(/limit/);
    await usage.charge(w.orgId, 'imports', 50_000);

    const res = await t.api.get('/usage', w.session);
    expect(res.body).toMatchObject({ mcp_queries: { used: 2, limit: 2 }, imports: { used: 50_000, limit: null } });
  });
});

// A host's own route, charged with @Charges the way the rest of a monolith would use it.
let handled = 0;

@Controller('decisions')
class DecisionsController {
  @Post()
  @RequireScopes('decisions:write')
  @Charges('captures')
  capture(@CurrentPrincipal() principal: Principal): { captured_in: string | null } {
    handled++;
    return { captured_in: principal.orgId };
  }

  /** A handler that refuses some input after the charge was taken, as a host's validation would. */
  @Post('checked')
  @RequireScopes('decisions:write')
  @Charges('captures')
  async checked(@Body() body: { text?: unknown }): Promise<{ ok: true }> {
    await Promise.resolve();
    if (typeof body.text !== 'string') throw new BadRequestException('text must be a string');
    handled++;
    return { ok: true };
  }

  /** A pipe that refuses the input: its request was charged (pipes run after interceptors) and is given back. */
  @Post('piped')
  @RequireScopes('decisions:write')
  @Charges('captures')
  piped(@Query('n', ParseIntPipe) n: number): { n: number } {
    handled++;
    return { n };
  }
}

/** A controller's routes declared on a base class it extends. */
class BaseImports {
  @Post('inherited')
  inherited(): { inherited: true } {
    return { inherited: true };
  }
}

/** @Charges on the class charges every route; a route's own @Charges overrides it, charging once. */
@Controller('imports')
@RequireScopes('decisions:write')
@Charges('imports')
class ImportsController {
  @Post()
  start(): { started: true } {
    return { started: true };
  }

  @Post('bulk')
  @Charges('imports', 3)
  bulk(): { started: number } {
    return { started: 3 };
  }
}

@Controller('derived-imports')
@RequireScopes('decisions:write')
@Charges('imports', 2)
class DerivedImportsController extends BaseImports {}

// Both charging paths: leased (the default; the tables are read once this instance's counts are
// written, UsageService.settle) and exact (every charge committed before the answer).
describe.each(['leased', 'exact'] as const)('@Charges on a host route (%s charging)', (charging) => {
  let db: TestDatabase;
  let host: ChargingHost;
  let api: ApiClient;
  let seed: Seeder;
  const clock = new TestClock('2031-03-14T23:00:00.000Z');

  beforeAll(async () => {
    db = await createTestDatabase();
    seed = new Seeder(db.pool);
    host = await startChargingHost(db, clock, [DecisionsController, ImportsController, DerivedImportsController], {
      planLimits: parsePlanLimits({ free: { captures: 2 } }),
      usage: { charging },
    });
    api = host.api;
  });
  beforeEach(() => {
    clock.set('2031-03-14T23:00:00.000Z');
    handled = 0;
  });
  const counted = async (orgId: string) => {
    await host.app.get(UsageService).settle();
    return counters(db.pool, orgId);
  };
  afterAll(async () => {
    await host?.close();
    await db?.drop();
  });

  it('charges the principal’s org once per successful request', async () => {
    const w = await seed.world('member');

    const res = await api.post('/decisions', w.session, {});

    expect(res.status).toBe(201);
    expect(res.body).toEqual({ captured_in: w.orgId });
    expect(handled).toBe(1);
    expect(await counted(w.orgId)).toEqual([{ day: '2031-03-14', asks: 0, retrieves: 0, imports: 0, captures: 1 }]);
  });

  it('answers 429 with Retry-After in seconds until the next UTC midnight once the meter is spent, without running the handler or recording anything', async () => {
    const w = await seed.world('member');
    expect((await api.post('/decisions', w.session, {})).status).toBe(201);
    expect((await api.post('/decisions', w.session, {})).status).toBe(201);
    handled = 0;

    const refused = await api.post('/decisions', w.session, {});
    clock.set('2031-03-14T23:59:59.200Z');
    const lastMoment = await api.post('/decisions', w.session, {});

    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('3600');
    expect(refused.body).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
    expect(refused.body.message).toContain('captures');
    expect(lastMoment.status).toBe(429);
    expect(lastMoment.headers.get('retry-after')).toBe('1');
    expect(handled).toBe(0);
    expect(await counted(w.orgId)).toEqual([{ day: '2031-03-14', asks: 0, retrieves: 0, imports: 0, captures: 2 }]);
  });

  it('charges again after UTC midnight', async () => {
    const w = await seed.world('member');
    await api.post('/decisions', w.session, {});
    await api.post('/decisions', w.session, {});

    clock.set('2031-03-15T00:00:00.000Z');
    const res = await api.post('/decisions', w.session, {});

    expect(res.status).toBe(201);
    expect((await counted(w.orgId)).map((r) => [r.day, r.captures])).toEqual([
      ['2031-03-14', 2],
      ['2031-03-15', 1],
    ]);
  });

  it('charges nothing when authentication or the scope check refuses the request', async () => {
    const w = await seed.world('member');
    const readOnly = (await insertKeyRow(db.pool, { userId: w.userId, orgId: w.orgId, scopes: ['decisions:read'] }))
      .key;

    const anonymous = await api.post('/decisions', undefined, {});
    const forged = await api.post(
      '/decisions',
      seed.session(w.userId, w.email, { secret: 'another-secret-0123456789abcdef-0123' }),
      {},
    );
    const unscoped = await api.post('/decisions', readOnly, {});
    const foreignOrg = await api.post('/decisions', w.session, {}, { 'x-org-id': randomUUID() });

    expect([anonymous.status, forged.status, unscoped.status, foreignOrg.status]).toEqual([401, 401, 403, 404]);
    expect(handled).toBe(0);
    expect(await counted(w.orgId)).toEqual([]);
  });

  it('charges the key’s org for an API key', async () => {
    const w = await seed.world('member');
    const key = (
      await insertKeyRow(db.pool, { userId: w.userId, orgId: w.orgId, scopes: ['decisions:read', 'decisions:write'] })
    ).key;

    const res = await api.post('/decisions', key, {});

    expect(res.status).toBe(201);
    expect((await counted(w.orgId)).map((r) => r.captures)).toEqual([1]);
  });

  it('gives back the charge when the handler refuses the request, so failed requests never spend the meter', async () => {
    const w = await seed.world('member');

    const refused = [];
    for (let i = 0; i < 3; i++) refused.push((await api.post('/decisions/checked', w.session, { text: 42 })).status);
    const accepted = [
      (await api.post('/decisions/checked', w.session, { text: 'a' })).status,
      (await api.post('/decisions/checked', w.session, { text: 'b' })).status,
    ];

    expect(refused).toEqual([400, 400, 400]);
    expect(accepted).toEqual([201, 201]);
    expect((await counted(w.orgId)).map((r) => r.captures)).toEqual([2]);
  });

  it('gives back the charge of input a route’s pipe refuses, never running the handler', async () => {
    const w = await seed.world('member');

    const refused = [];
    for (let i = 0; i < 3; i++) refused.push((await api.post('/decisions/piped?n=abc', w.session, {})).status);
    expect(refused).toEqual([400, 400, 400]);
    expect(handled).toBe(0);
    // Exact charging gave the three back in the database; leased charging before they were ever written.
    expect((await counted(w.orgId)).map((r) => r.captures)).toEqual(charging === 'exact' ? [0] : []);

    const accepted = [
      await api.post('/decisions/piped?n=7', w.session, {}),
      await api.post('/decisions/piped?n=8', w.session, {}),
    ];
    expect(accepted.map((r) => [r.status, r.body])).toEqual([
      [201, { n: 7 }],
      [201, { n: 8 }],
    ]);
    expect((await counted(w.orgId)).map((r) => r.captures)).toEqual([2]);
  });

  it('charges the routes a controller marked @Charges inherits from its base class', async () => {
    const w = await seed.world('member');

    const res = await api.post('/derived-imports/inherited', w.session, {});

    expect([res.status, res.body]).toEqual([201, { inherited: true }]);
    expect((await counted(w.orgId)).map((r) => r.imports)).toEqual([2]);
  });

  it('charges every route of a controller marked @Charges, and a route’s own @Charges replaces it rather than adding to it', async () => {
    const w = await seed.world('member');

    const single = await api.post('/imports', w.session, {});
    const bulk = await api.post('/imports/bulk', w.session, {});

    expect([single.status, bulk.status]).toEqual([201, 201]);
    expect(await counted(w.orgId)).toEqual([{ day: '2031-03-14', asks: 0, retrieves: 0, imports: 4, captures: 0 }]);
  });
});
