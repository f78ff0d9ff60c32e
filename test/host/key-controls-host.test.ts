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

/** A careless host handler: it tries to change the key's metadata and limits in place. */
@Controller('meddle')
class MeddleController {
  @Get()
  @Authenticated()
  meddle(@CurrentPrincipal() principal: Principal): { metadata: unknown; refused: string[] } {
    const attempts: Array<[string, () => void]> = [
      ['metadata field', () => ((principal.metadata as Record<string, unknown>).team = 'changed')],
      ['nested metadata', () => ((principal.metadata!.nested as Record<string, unknown>).deep = 'changed')],
      ['metadata array', () => (principal.metadata!.tags as unknown[]).push('changed')],
      ['credits', () => ((principal.limits!.credits as { epoch: number }).epoch = 99)],
      ['windows', () => (principal.limits!.windows as unknown[]).push({ name: 'x', limit: 1, window_seconds: 1 })],
      ['window', () => ((principal.limits!.windows![0] as { limit: number }).limit = 1_000_000)],
      ['allows', () => ((principal.limits as { allows: unknown }).allows = () => true)],
    ];
    const refused: string[] = [];
    for (const [what, attempt] of attempts) {
      try {
        attempt();
      } catch (error) {
        if (error instanceof TypeError) refused.push(what);
      }
    }
    return { metadata: principal.metadata ?? null, refused };
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
    host = await startHost({
      platform,
      databaseUrl: db.url,
      hostControllers: [ReportsController, UploadsController, MeddleController],
    });
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

  it('hands host code frozen metadata and limits: changing them throws and the next request sees the key as set', async () => {
    const w = await seed.world('owner');
    const metadata = { team: 'batch', nested: { deep: 'as set' }, tags: ['a'] };
    const minted = await host.api.post('/api-keys', w.session, {
      org_id: w.orgId,
      metadata,
      credits: { remaining: 100 },
      rate_limits: [{ name: 'default', limit: 50, window_seconds: 60 }],
      allowed_cidrs: ['127.0.0.0/8', '::1/128'],
    });
    expect(minted.status).toBe(201);
    const all = ['metadata field', 'nested metadata', 'metadata array', 'credits', 'windows', 'window', 'allows'];
    for (let i = 0; i < 3; i++) {
      const res = await host.api.get('/meddle', minted.body.key);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ metadata, refused: all });
    }
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
