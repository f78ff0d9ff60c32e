import { BadRequestException, Body, Controller, Post } from '@nestjs/common';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RequireScopes } from '../../src/auth/auth.decorators.js';
import { Charges } from '../../src/usage/charges.decorator.js';
import { UsageService } from '../../src/usage/usage.service.js';
import { startChargingHost, type ChargingHost } from '../support/charging-host.js';
import { TestClock } from '../support/clock.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ApiClient } from '../support/http.js';
import { insertKeyRow } from '../support/factories.js';
import { Seeder } from '../support/seed.js';
import { NOWHERE } from './api-keys.fixtures.js';

const NOW = '2031-03-14T15:00:00.000Z';
const DAY_FIELDS = ['breakdown', 'captures', 'day', 'imports', 'mcp_queries', 'meters', 'plan'];
const FREE = { wallet: 100, imports: 10, captures: 100 };

/** A host route charged with @Charges, as a monolith's API would be. */
@Controller('decisions')
class DecisionsController {
  @Post()
  @RequireScopes('decisions:write')
  @Charges('captures')
  capture(): { ok: true } {
    return { ok: true };
  }

  @Post('ask')
  @RequireScopes('decisions:write')
  @Charges('asks', 2)
  ask(@Body() body: { fail?: boolean }): { ok: true } {
    if (body.fail) throw new BadRequestException('refused after the charge');
    return { ok: true };
  }
}

describe('usage history over HTTP', () => {
  let db: TestDatabase;
  let host: ChargingHost;
  let api: ApiClient;
  let seed: Seeder;
  const clock = new TestClock(NOW);

  beforeAll(async () => {
    db = await createTestDatabase();
    seed = new Seeder(db.pool);
    host = await startChargingHost(db, clock, [DecisionsController], { usage: { retentionDays: 120 } });
    api = host.api;
  });
  beforeEach(() => clock.set(NOW));
  afterAll(async () => {
    await host?.close();
    await db?.drop();
  });

  async function mint(session: string, orgId: string): Promise<{ id: string; key: string }> {
    const res = await api.post('/api-keys', session, { org_id: orgId, scopes: ['decisions:read', 'decisions:write'] });
    expect(res.status, res.text).toBe(201);
    return { id: res.body.id, key: res.body.key };
  }

  async function member(orgId: string, role: 'owner' | 'admin' | 'member' | 'viewer') {
    const user = await seed.user();
    await seed.member(orgId, user.id, role);
    await seed.workspace(orgId, user.id);
    return { userId: user.id, session: seed.session(user.id, user.email) };
  }

  /** An org with an owner and a member, each with a key, and charges over three days. */
  async function history() {
    const w = await seed.world('owner', 'free');
    const m = await member(w.orgId, 'member');
    const ownerKey = await mint(w.session, w.orgId);
    const memberKey = await mint(m.session, w.orgId);
    clock.set('2031-03-12T09:00:00Z');
    for (let i = 0; i < 3; i++) expect((await api.post('/decisions', ownerKey.key, {})).status).toBe(201);
    clock.set('2031-03-14T09:00:00Z');
    expect((await api.post('/decisions', memberKey.key, {})).status).toBe(201);
    expect((await api.post('/decisions/ask', memberKey.key, {})).status).toBe(201);
    expect((await api.post('/decisions/ask', w.session, {})).status).toBe(201);
    clock.set(NOW);
    return { ...w, member: m, ownerKey, memberKey };
  }

  describe('GET /usage/daily', () => {
    it('answers one entry per UTC day, zeros included, in the meter shapes of GET /usage with the limits of the day', async () => {
      const h = await history();

      const res = await api.get('/usage/daily?from=2031-03-11&to=2031-03-14', h.ownerKey.key);

      expect(res.status, res.text).toBe(200);
      expect(res.body.from).toBe('2031-03-11');
      expect(res.body.to).toBe('2031-03-14');
      expect(res.body.days.map((d: object) => Object.keys(d).sort())).toEqual([
        DAY_FIELDS,
        DAY_FIELDS,
        DAY_FIELDS,
        DAY_FIELDS,
      ]);
      // `meters` restates the contract's meters by name (the deployment defines none here).
      for (const d of res.body.days) {
        expect(d.meters).toEqual({
          asks: { used: d.breakdown.asks, limit: d.mcp_queries.limit },
          retrieves: { used: d.breakdown.retrieves, limit: d.mcp_queries.limit },
          imports: d.imports,
          captures: d.captures,
        });
      }
      expect(res.body.days.map(({ meters: _meters, ...d }: { meters: object }) => d)).toEqual([
        {
          day: '2031-03-11',
          plan: 'free',
          mcp_queries: { used: 0, limit: FREE.wallet },
          breakdown: { asks: 0, retrieves: 0 },
          imports: { used: 0, limit: FREE.imports },
          captures: { used: 0, limit: FREE.captures },
        },
        {
          day: '2031-03-12',
          plan: 'free',
          mcp_queries: { used: 0, limit: FREE.wallet },
          breakdown: { asks: 0, retrieves: 0 },
          imports: { used: 0, limit: FREE.imports },
          captures: { used: 3, limit: FREE.captures },
        },
        {
          day: '2031-03-13',
          plan: 'free',
          mcp_queries: { used: 0, limit: FREE.wallet },
          breakdown: { asks: 0, retrieves: 0 },
          imports: { used: 0, limit: FREE.imports },
          captures: { used: 0, limit: FREE.captures },
        },
        {
          day: '2031-03-14',
          plan: 'free',
          mcp_queries: { used: 4, limit: FREE.wallet },
          breakdown: { asks: 4, retrieves: 0 },
          imports: { used: 0, limit: FREE.imports },
          captures: { used: 1, limit: FREE.captures },
        },
      ]);
      // Today's entry agrees with GET /usage.
      const today = (await api.get('/usage', h.session)).body;
      const { day: _day, plan: _plan, ...meters } = res.body.days[3];
      expect(meters).toEqual({
        mcp_queries: today.mcp_queries,
        breakdown: today.breakdown,
        imports: today.imports,
        captures: today.captures,
        meters: today.meters,
      });
    });

    it('shows the plan and limits a past day was charged under after the plan changes', async () => {
      const h = await history();
      await db.pool.query(`UPDATE orgs SET plan = 'pro' WHERE id = $1`, [h.orgId]);
      // A change made behind the service's back: wait until every verification cache has applied it.
      await seed.acknowledged();

      const days = (await api.get('/usage/daily?from=2031-03-12&to=2031-03-13', h.session)).body.days;

      expect(days.map((d: { plan: string; mcp_queries: object }) => [d.plan, d.mcp_queries])).toEqual([
        ['free', { used: 0, limit: 100 }],
        ['pro', { used: 0, limit: null }],
      ]);
    });

    it('defaults to the 30 days up to today', async () => {
      const w = await seed.world('viewer');

      const res = await api.get('/usage/daily', w.session);

      expect(res.status).toBe(200);
      expect([res.body.from, res.body.to, res.body.days.length]).toEqual(['2031-02-13', '2031-03-14', 30]);
    });

    it.each([
      ['from=2031-3-1&to=2031-03-14', 'from must be a date in the form YYYY-MM-DD (a UTC day)'],
      ['from=2031-02-29', 'from must be a date in the form YYYY-MM-DD (a UTC day)'],
      ['from=2031-03-01&to=03/14/2031', 'to must be a date in the form YYYY-MM-DD (a UTC day)'],
      ['from=2031-03-10&to=2031-03-09', 'from must not be after to'],
      ['from=2030-12-12&to=2031-03-14', 'to must be at most 91 days after from (at most 92 days per request)'],
      ['from=2030-11-14&to=2030-11-20', 'from must not be before 2030-11-15: usage history is kept for 120 days'],
      ['to=2031-03-15', 'to must not be after today (2031-03-14, UTC)'],
    ])('answers 400 naming the parameter for ?%s', async (query, message) => {
      const w = await seed.world('viewer');

      const res = await api.get(`/usage/daily?${query}`, w.session);

      expect(res.status).toBe(400);
      expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', message });
    });

    it('accepts exactly 92 days', async () => {
      const w = await seed.world('viewer');

      const res = await api.get('/usage/daily?from=2030-12-13&to=2031-03-14', w.session);

      expect(res.status).toBe(200);
      expect(res.body.days).toHaveLength(92);
    });

    it('needs a credential with decisions:read, as GET /usage does', async () => {
      const w = await seed.world('member');
      const writeOnly = (await insertKeyRow(db.pool, { userId: w.userId, orgId: w.orgId, scopes: ['decisions:write'] }))
        .key;

      expect((await api.get('/usage/daily')).status).toBe(401);
      expect((await api.get('/usage/daily', writeOnly)).status).toBe(403);
    });
  });

  describe('GET /api-keys/{keyID}/usage', () => {
    it('answers what that key charged, per day, with the org’s limits', async () => {
      const h = await history();

      const res = await api.get(`/api-keys/${h.memberKey.id}/usage?from=2031-03-12&to=2031-03-14`, h.member.session);

      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ key_id: h.memberKey.id, org_id: h.orgId, from: '2031-03-12', to: '2031-03-14' });
      expect(
        res.body.days.map((d: { day: string; mcp_queries: object; captures: object }) => [
          d.day,
          d.mcp_queries,
          d.captures,
        ]),
      ).toEqual([
        ['2031-03-12', { used: 0, limit: 100 }, { used: 0, limit: 100 }],
        ['2031-03-13', { used: 0, limit: 100 }, { used: 0, limit: 100 }],
        ['2031-03-14', { used: 2, limit: 100 }, { used: 1, limit: 100 }],
      ]);
      const owner = await api.get(`/api-keys/${h.ownerKey.id}/usage?from=2031-03-12&to=2031-03-12`, h.session);
      expect(owner.body.days[0].captures.used).toBe(3);
    });

    it('does not count a charge that was given back because the handler failed', async () => {
      const h = await history();
      expect((await api.post('/decisions/ask', h.memberKey.key, { fail: true })).status).toBe(400);

      const res = await api.get(`/api-keys/${h.memberKey.id}/usage?from=2031-03-14&to=2031-03-14`, h.member.session);

      expect(res.body.days[0].breakdown.asks).toBe(2);
    });

    it('answers 404, identical to a missing key, for another user’s key', async () => {
      const h = await history();

      const foreign = await api.get(`/api-keys/${h.ownerKey.id}/usage`, h.member.session);
      const missing = await api.get(`/api-keys/${NOWHERE}/usage`, h.member.session);

      expect(foreign.status).toBe(404);
      expect(foreign.body).toEqual(missing.body);
    });

    it('is session only (403 for an API key), needs a UUID and checks the range', async () => {
      const h = await history();

      expect((await api.get(`/api-keys/${h.memberKey.id}/usage`, h.memberKey.key)).status).toBe(403);
      expect((await api.get(`/api-keys/not-a-uuid/usage`, h.member.session)).body.message).toBe('keyID must be a UUID');
      expect((await api.get(`/api-keys/${h.memberKey.id}/usage?to=2031-13-01`, h.member.session)).body.message).toBe(
        'to must be a date in the form YYYY-MM-DD (a UTC day)',
      );
      expect((await api.get(`/api-keys/${h.memberKey.id}/usage`)).status).toBe(401);
    });
  });

  describe('GET /orgs/{org_id}/api-keys/{keyID}/usage', () => {
    it('lets owners and admins read any key of their org', async () => {
      const h = await history();
      const admin = await member(h.orgId, 'admin');

      const byOwner = await api.get(
        `/orgs/${h.orgId}/api-keys/${h.memberKey.id}/usage?from=2031-03-14&to=2031-03-14`,
        h.session,
      );
      const byAdmin = await api.get(
        `/orgs/${h.orgId}/api-keys/${h.memberKey.id}/usage?from=2031-03-14&to=2031-03-14`,
        admin.session,
      );

      expect([byOwner.status, byAdmin.status]).toEqual([200, 200]);
      expect(byOwner.body).toEqual(byAdmin.body);
      expect(byOwner.body.days[0].captures.used).toBe(1);
    });

    it('answers 403 to members and viewers, 404 to non-members as for a missing org, 404 for a key of another org', async () => {
      const h = await history();
      const viewer = await member(h.orgId, 'viewer');
      const outsider = await seed.world('owner');
      const otherKey = await mint(outsider.session, outsider.orgId);
      const path = `/orgs/${h.orgId}/api-keys/${h.ownerKey.id}/usage`;

      expect((await api.get(path, h.member.session)).status).toBe(403);
      expect((await api.get(path, viewer.session)).status).toBe(403);
      const notMember = await api.get(path, outsider.session);
      const noOrg = await api.get(`/orgs/${NOWHERE}/api-keys/${h.ownerKey.id}/usage`, outsider.session);
      expect(notMember.status).toBe(404);
      expect(notMember.body).toEqual(noOrg.body);
      const foreignKey = await api.get(`/orgs/${h.orgId}/api-keys/${otherKey.id}/usage`, h.session);
      const missingKey = await api.get(`/orgs/${h.orgId}/api-keys/${NOWHERE}/usage`, h.session);
      expect(foreignKey.status).toBe(404);
      expect(foreignKey.body).toEqual(missingKey.body);
      expect((await api.get(`/orgs/nope/api-keys/${h.ownerKey.id}/usage`, h.session)).body.message).toBe(
        'org_id must be a UUID',
      );
      expect((await api.get(path, h.ownerKey.key)).status).toBe(403);
    });
  });

  it('attributes @Charges on a host route to the key or the session that called it, summing to the org meter', async () => {
    const h = await history();
    // The tables themselves: once this instance's counts are written (leased charging writes them behind the answers).
    await host.app.get(UsageService).settle();

    const { rows } = await db.pool.query(
      `SELECT day::text, credential_kind, credential_id, user_id, asks, captures FROM usage_attribution WHERE org_id = $1 ORDER BY day, credential_kind, credential_id`,
      [h.orgId],
    );

    const keyRows = rows.filter((r) => r.credential_kind === 'api_key');
    expect(keyRows).toEqual(
      expect.arrayContaining([
        {
          day: '2031-03-12',
          credential_kind: 'api_key',
          credential_id: h.ownerKey.id,
          user_id: h.userId,
          asks: 0,
          captures: 3,
        },
        {
          day: '2031-03-14',
          credential_kind: 'api_key',
          credential_id: h.memberKey.id,
          user_id: h.member.userId,
          asks: 2,
          captures: 1,
        },
      ]),
    );
    expect(rows.filter((r) => r.credential_kind === 'session')).toEqual([
      {
        day: '2031-03-14',
        credential_kind: 'session',
        credential_id: h.userId,
        user_id: h.userId,
        asks: 2,
        captures: 0,
      },
    ]);
    expect(rows).toHaveLength(3);
  });
});
