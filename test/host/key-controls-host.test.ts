import { Controller, Get } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Authenticated, CurrentPrincipal, RateLimited, type Principal } from '../../src/index.js';
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

let db: TestDatabase;
let seed: Seeder;
beforeAll(async () => ({ db, seed } = await createSeededDatabase()));
afterAll(async () => db?.drop());

describe.each(PLATFORMS)('a host route with @RateLimited on %s', (platform) => {
  let host: HostApp;
  beforeAll(async () => {
    host = await startHost({ platform, databaseUrl: db.url, hostControllers: [ReportsController] });
  });
  afterAll(async () => host?.close());

  it('spends its cost from the key’s credits, hands the metadata to host code, and refuses once spent', async () => {
    const w = await seed.world('owner');
    const minted = await host.api.post('/api-keys', w.session, { org_id: w.orgId });
    const key = minted.body.key as string;
    const patched = await host.api.request('PATCH', `/api-keys/${minted.body.id}`, { token: w.session, body: { credits: { remaining: 12 }, metadata: { team: 'batch' } } });
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
});
