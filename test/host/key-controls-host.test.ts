import { Controller, Get, Post } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Authenticated,
  Charges,
  CurrentPrincipal,
  RateLimited,
  RequireScopes,
  type Principal,
} from '../../src/index.js';
import { createSeededDatabase, type TestDatabase } from '../support/database.js';
import type { Seeder } from '../support/seed.js';
import { PLATFORMS, startHost, type HostApp } from './support/host-app.js';

/** A host route that opts into a named window and a cost, and reads the key's metadata. */
@Controller('reports')
class ReportsController {
  @Get()
  @Authenticated()
  @RateLimited('default', { cost: 5 })
  run(@CurrentPrincipal() principal: Principal): { metadata: unknown } {
    return { metadata: principal.metadata ?? null };
  }
}

/** Scopes above charges, as hosts write them: the key's limits must still come before the meter. */
@Controller('uploads')
class UploadsController {
  @Post()
  @RequireScopes('decisions:write')
  @Charges('imports')
  upload(): { ok: true } {
    return { ok: true };
  }
}

let db: TestDatabase;
let seed: Seeder;
beforeAll(async () => ({ db, seed } = await createSeededDatabase()));
afterAll(async () => db?.drop());

describe.each(PLATFORMS)('a host route with @RateLimited on %s', (platform) => {
  let host: HostApp;
  beforeAll(async () => {
    host = await startHost({ platform, databaseUrl: db.url, hostControllers: [ReportsController, UploadsController] });
  });
  afterAll(async () => host?.close());

  it('spends its cost from the key’s credits, hands the metadata to host code, and refuses once spent', async () => {
    const w = await seed.world('owner');
    const minted = await host.api.post('/api-keys', w.session, { org_id: w.orgId });
    const key = minted.body.key as string;
    const patched = await host.api.request('PATCH', `/api-keys/${minted.body.id}`, {
      token: w.session,
      body: { credits: { remaining: 12 }, metadata: { team: 'batch' } },
    });
    expect(patched.status).toBe(200);
    const first = await host.api.get('/reports', key);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ metadata: { team: 'batch' } });
    expect((await host.api.get('/reports', key)).status).toBe(200);
    // 10 of 12 spent: a third report (5) is refused, and spends nothing, so two GET /me (1 each) still pass.
    const refused = await host.api.get('/reports', key);
    expect(refused.status).toBe(429);
    expect(refused.body.message).toContain('credits');
    expect((await host.api.get('/me', key)).status).toBe(200);
    expect((await host.api.get('/me', key)).status).toBe(200);
    expect((await host.api.get('/me', key)).status).toBe(429);
  });

  it('applies the key’s credits before the org’s meter, and a refusal charges neither', async () => {
    const w = await seed.world('owner');
    const plain = await host.api.post('/api-keys', w.session, { org_id: w.orgId, scopes: ['decisions:write'] });
    const spent = await host.api.post('/api-keys', w.session, {
      org_id: w.orgId,
      scopes: ['decisions:write'],
      credits: { remaining: 0 },
    });
    const refused = await host.api.post('/uploads', spent.body.key, {});
    expect(refused.status).toBe(429);
    expect(refused.body.message).toContain('credits');
    // The refused request charged nothing: the org's whole daily allowance of imports (2) is still there.
    expect((await host.api.post('/uploads', plain.body.key, {})).status).toBe(201);
    expect((await host.api.post('/uploads', plain.body.key, {})).status).toBe(201);
    const meter = await host.api.post('/uploads', plain.body.key, {});
    expect(meter.status).toBe(429);
    expect(meter.body.message).not.toContain('credits');
    // With the meter spent too, the key's own limit is what a spent key hears first.
    expect((await host.api.post('/uploads', spent.body.key, {})).body.message).toContain('credits');
  });
});
