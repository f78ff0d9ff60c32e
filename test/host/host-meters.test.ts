import { Controller, Post } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Charges,
  CurrentPrincipal,
  MeterRegistry,
  RequireScopes,
  SessionOnly,
  type MeterRegistryInput,
  type PlanLimits,
  type Principal,
} from '../../src/index.js';
import { createSeededDatabase, type TestDatabase } from '../support/database.js';
import type { Seeder } from '../support/seed.js';
import { HOST_PLAN_LIMITS, PLATFORMS, startHost, type HostApp } from './support/host-app.js';

/** A host's own meter, as it passes it in the module options, with a daily limit on the free plan. */
const meters: MeterRegistryInput = { exports: { description: 'Report exports' } };
const planLimits: PlanLimits = { ...HOST_PLAN_LIMITS, free: { ...HOST_PLAN_LIMITS.free, exports: 2 } };

/** The host's route, charging its own meter. */
@Controller('reports')
class ReportsController {
  constructor(private readonly registry: MeterRegistry) {}

  @Post('export')
  @RequireScopes('decisions:write')
  @Charges('exports')
  export(@CurrentPrincipal() principal: Principal): { org_id: string | null; meters: readonly string[] } {
    return { org_id: principal.orgId, meters: this.registry.deployment };
  }
}

/** A route that charges a meter nobody defined: the host must not start. */
@Controller('typo')
@RequireScopes('decisions:write')
@Charges('undefined-meter')
class TypoController {
  @Post()
  run(): { ok: true } {
    return { ok: true };
  }
}

/** Charged routes none of our guards would charge: behind the host's own auth only, or a session-only route (no org). */
@Controller('unguarded')
class UnguardedController {
  @Post()
  @Charges('exports')
  run(): { ok: true } {
    return { ok: true };
  }
}

@Controller('browser')
class SessionOnlyController {
  @Post()
  @SessionOnly()
  @Charges('exports')
  run(): { ok: true } {
    return { ok: true };
  }
}

let db: TestDatabase;
let seed: Seeder;
beforeAll(async () => ({ db, seed } = await createSeededDatabase()));
afterAll(async () => db?.drop());

describe.each(PLATFORMS)('a host with its own meters on %s', (platform) => {
  let host: HostApp;
  beforeAll(async () => {
    host = await startHost({ platform, databaseUrl: db.url, meters, planLimits, hostControllers: [ReportsController] });
  });
  afterAll(async () => host?.close());

  it('charges its own meter with @Charges up to the plan’s limit, then 429 with Retry-After; GET /usage shows it', async () => {
    const w = await seed.world('member');
    const minted = await host.api.post('/api-keys', w.session, { org_id: w.orgId, scopes: ['decisions:write'] });
    expect(minted.status).toBe(201);
    const key = minted.body.key as string;

    const first = await host.api.post('/reports/export', key, {});
    const second = await host.api.post('/reports/export', key, {});
    const refused = await host.api.post('/reports/export', key, {});

    expect(first.status).toBe(201);
    expect(first.body).toEqual({ org_id: w.orgId, meters: ['exports'] });
    expect(second.status).toBe(201);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.body.message).toMatch(/^Daily exports limit reached: 2 of 2 used, 1 more requested/);
    const usage = await host.api.get('/usage', w.session);
    expect(usage.body.meters.exports).toEqual({ used: 2, limit: 2 });
    expect(usage.body.captures).toEqual({ used: 0, limit: 2 });
  });

  it('refuses to start when a route charges a meter the deployment does not define, naming the route and the meter', async () => {
    await expect(
      startHost({ platform, databaseUrl: db.url, meters, planLimits, hostControllers: [TypoController] }),
    ).rejects.toThrow(
      /^@Charges on POST \/typo \(TypoController\.run\) charges "undefined-meter", which is not a defined meter: define it in the KeysUsageIdentityModule option meters/,
    );
  });

  it.each([
    ['none of our auth decorators', UnguardedController, 'POST /unguarded (UnguardedController.run)'],
    ['@SessionOnly()', SessionOnlyController, 'POST /browser (SessionOnlyController.run)'],
  ])('refuses to start when a charged route has %s, naming the route', async (_, controller, route) => {
    await expect(
      startHost({ platform, databaseUrl: db.url, meters, planLimits, hostControllers: [controller] }),
    ).rejects.toThrow(
      `@Charges on ${route} would never be charged: put @Authenticated() or @RequireScopes() on it (or its controller)`,
    );
  });
});
