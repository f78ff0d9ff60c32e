import http from 'node:http';
import { Controller, Post } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CurrentPrincipal, RequireScopes } from '../../src/auth/auth.decorators.js';
import type { Principal } from '../../src/auth/principal.js';
import { parsePlanLimits } from '../../src/common/plan-limits.js';
import { Charges } from '../../src/usage/charges.decorator.js';
import { OrgMeterLeases } from '../../src/budgets/org-meter-leases.js';
import { UsageService } from '../../src/usage/usage.service.js';
import { startChargingHost, type ChargingHost } from '../support/charging-host.js';
import { TestClock } from '../support/clock.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { Seeder } from '../support/seed.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * Org meters on leases (USAGE_CHARGING=leased, the default) across three instances of a host on
 * one PostgreSQL: the limit is exact under a burst, nothing stays refused once the blocks are
 * back, and a graceful shutdown writes every count. A `kill -9` is faults-usage-leases.test.ts's.
 */
@Controller('ask')
class AskController {
  @Post()
  @RequireScopes('decisions:read')
  @Charges('asks')
  ask(@CurrentPrincipal() principal: Principal): { org_id: string | null } {
    return { org_id: principal.orgId };
  }
}

// Many requests in flight at once, at most 200 sockets per instance (no OpenAPI check per answer).
const agent = new http.Agent({ keepAlive: true, maxSockets: 200 });
function post(host: ChargingHost, path: string, token: string): Promise<number> {
  const url = new URL(path, host.api.baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', agent, headers: { authorization: `Bearer ${token}`, 'content-length': 0 } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('org meters on leases across three instances', () => {
  let db: TestDatabase;
  let seed: Seeder;
  let hosts: ChargingHost[];
  const clock = new TestClock('2031-03-14T12:00:00.000Z');

  beforeAll(async () => {
    db = await createTestDatabase();
    seed = new Seeder(db.pool);
    const options = { planLimits: parsePlanLimits({ free: { wallet: 1000 } }), usage: { charging: 'leased' as const } };
    hosts = [];
    for (let i = 0; i < 3; i++) hosts.push(await startChargingHost(db, clock, [AskController], options));
  });
  afterAll(async () => {
    await Promise.all((hosts ?? []).map((h) => h.close()));
    agent.destroy();
    await db?.drop();
  });

  /** `n` requests at once, spread over the instances in turn; the statuses by instance. */
  const burst = (n: number, token: string, on = hosts) =>
    Promise.all(Array.from({ length: n }, (_, i) => post(on[i % on.length]!, '/ask', token)));
  /** Every instance's counts written and every block given back, as a graceful shutdown does. */
  const settleAndReturn = async () => {
    for (const h of hosts) {
      await h.app.get(UsageService).settle();
      await h.app.get(OrgMeterLeases).returnAll();
    }
  };
  const counted = async (orgId: string) => {
    const { rows } = await db.pool.query(
      `SELECT (SELECT asks FROM usage_counters WHERE org_id = $1) AS asks,
              (SELECT sum(asks)::int FROM usage_attribution WHERE org_id = $1) AS attributed,
              (SELECT coalesce(sum(held), 0)::int FROM usage_leases WHERE org_id = $1 AND expires_at > now()) AS held`,
      [orgId],
    );
    return rows[0] as { asks: number; attributed: number; held: number };
  };

  it('admits exactly 1,000 of 3,000 concurrent charged requests against a limit of 1,000 a day, and counts each once', async () => {
    const w = await seed.world('owner');

    const statuses = await burst(3000, w.session);

    expect(statuses.filter((s) => s === 201)).toHaveLength(1000);
    expect(statuses.filter((s) => s === 429)).toHaveLength(2000);
    await settleAndReturn();
    expect(await counted(w.orgId)).toEqual({ asks: 1000, attributed: 1000, held: 0 });
    const report = await hosts[1]!.api.get('/usage', w.session);
    expect(report.body.mcp_queries).toEqual({ used: 1000, limit: 1000 });
    expect(await post(hosts[2]!, '/ask', w.session)).toBe(429);
  });

  it('refuses nothing that is left once the instances have given their blocks back', async () => {
    const w = await seed.world('owner');

    const first = await burst(600, w.session);
    expect(first.filter((s) => s === 201)).toHaveLength(600);
    // The three instances hold blocks they did not spend; given back (idle, day end, shutdown), all of it is there again.
    await settleAndReturn();
    const rest = await burst(400, w.session, [hosts[0]!]);

    expect(rest.filter((s) => s === 201)).toHaveLength(400);
    expect(await post(hosts[1]!, '/ask', w.session)).toBe(429);
    await settleAndReturn();
    expect(await counted(w.orgId)).toEqual({ asks: 1000, attributed: 1000, held: 0 });
  });

  it('shows on GET /usage what this instance charged at once, and what the others charged once they wrote it', async () => {
    const w = await seed.world('owner');
    await burst(30, w.session, [hosts[0]!]);
    await burst(20, w.session, [hosts[1]!]);

    // Each instance writes its own pending counts before it answers GET /usage.
    expect((await hosts[0]!.api.get('/usage', w.session)).body.mcp_queries.used).toBe(30);
    await hosts[1]!.app.get(UsageService).settle();
    expect((await hosts[2]!.api.get('/usage', w.session)).body.mcp_queries.used).toBe(50);
  });
});

describe('a graceful shutdown of an instance that charges on leases', () => {
  it('writes every count and gives its blocks back before the pool closes (app.close, what SIGTERM runs)', async () => {
    const db = await createTestDatabase();
    const clock = new TestClock('2031-03-14T12:00:00.000Z');
    const options = { planLimits: parsePlanLimits({ free: { wallet: 1000 } }), usage: { charging: 'leased' as const } };
    const [stays, leaves] = [
      await startChargingHost(db, clock, [AskController], options),
      await startChargingHost(db, clock, [AskController], options),
    ];
    try {
      const w = await new Seeder(db.pool).world('owner');
      const statuses = await Promise.all(Array.from({ length: 300 }, () => post(leaves, '/ask', w.session)));
      expect(statuses.filter((s) => s === 201)).toHaveLength(300);

      await leaves.close();

      const { rows } = await db.pool.query(
        `SELECT c.asks, (SELECT coalesce(sum(held), 0)::int FROM usage_leases l WHERE l.org_id = c.org_id) AS held
           FROM usage_counters c WHERE c.org_id = $1`,
        [w.orgId],
      );
      expect(rows).toEqual([{ asks: 300, held: 0 }]);
      // Nothing it held stays taken: the other instance gets the remaining 700, exactly.
      const rest = await Promise.all(Array.from({ length: 701 }, () => post(stays, '/ask', w.session)));
      expect(rest.filter((s) => s === 201)).toHaveLength(700);
    } finally {
      await stays.close();
      await db.drop();
    }
  });
});

describe('usage.threshold on leased charging across three instances', () => {
  let apps: TestApp[];
  const clock = new TestClock('2031-03-14T12:00:00.000Z');
  beforeAll(async () => {
    const env = { USAGE_CHARGING: 'leased' };
    const first = await startTestApp({ clock, env });
    apps = [first, await startTestApp({ db: first.db, clock, env }), await startTestApp({ db: first.db, clock, env })];
  });
  afterAll(async () => {
    for (const app of [...(apps ?? [])].reverse()) await app.close();
  });

  it('is raised once per org, meter and day at 80 % and at 100 %, whichever instance’s write crossed it', async () => {
    const w = await apps[0]!.seed.world('owner'); // free: a wallet of 100 a day
    const services = apps.map((a) => a.app.get(UsageService));

    // 100 asks from the three instances at once, in rounds with a write of every instance between them.
    for (let round = 0; round < 4; round++) {
      await Promise.all(Array.from({ length: 25 }, (_, i) => services[i % 3]!.charge(w.orgId, 'asks', 1)));
      await Promise.all(services.map((s) => s.settle()));
    }
    await expect(services[1]!.charge(w.orgId, 'retrieves', 1)).rejects.toThrow(/query wallet limit/);

    const { rows } = await apps[0]!.db.pool.query(
      `SELECT subject, mark FROM event_marks WHERE kind = 'usage_threshold' AND subject LIKE $1 ORDER BY mark`,
      [`${w.orgId}%`],
    );
    expect(rows).toEqual([
      { subject: `${w.orgId}:mcp_queries:2031-03-14`, mark: '100' },
      { subject: `${w.orgId}:mcp_queries:2031-03-14`, mark: '80' },
    ]);
  });
});
