import { Controller, Get, ParseIntPipe, Post, Query } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Charges, RequireScopes } from '../../src/index.js';
import { createSeededDatabase, type TestDatabase } from '../support/database.js';
import type { Seeder } from '../support/seed.js';
import { PLATFORMS, startHost, type HostApp } from './support/host-app.js';

/**
 * Host routes that refuse a request after KeyLimitsGuard admitted it: the meters of @Charges
 * (written above the auth decorator), and a pipe. What the guard took must come back.
 */
@Controller('late')
class LateRefusalsController {
  @Post('imports')
  @Charges('imports')
  @RequireScopes('decisions:write')
  upload(): { ok: true } {
    return { ok: true };
  }

  @Get('page')
  @RequireScopes('decisions:write')
  page(@Query('n', ParseIntPipe) n: number): { n: number } {
    return { n };
  }
}

let db: TestDatabase;
let seed: Seeder;
beforeAll(async () => ({ db, seed } = await createSeededDatabase()));
afterAll(async () => db?.drop());

describe.each(PLATFORMS)('a key’s credits on a request refused after the guard, on %s', (platform) => {
  let host: HostApp;
  beforeAll(async () => {
    host = await startHost({ platform, databaseUrl: db.url, hostControllers: [LateRefusalsController] });
  });
  afterAll(async () => host?.close());

  const keyWithCredits = async (remaining: number) => {
    const w = await seed.world('owner');
    const minted = await host.api.post('/api-keys', w.session, {
      org_id: w.orgId,
      scopes: ['decisions:write'],
      credits: { remaining },
    });
    expect(minted.status).toBe(201);
    return minted.body.key as string;
  };

  it('are given back when the org’s meter refuses (429), so the key keeps them', async () => {
    const key = await keyWithCredits(3);
    // The org's imports allowance is 2 a day: two pass (2 credits), the third is the meter's 429.
    expect((await host.api.post('/late/imports', key, {})).status).toBe(201);
    expect((await host.api.post('/late/imports', key, {})).status).toBe(201);
    const meter = await host.api.post('/late/imports', key, {});
    expect(meter.status).toBe(429);
    expect(meter.body.message).not.toContain('credits');
    // The refused request's credit came back: one left, then none.
    expect((await host.api.get('/me', key)).status).toBe(200);
    const spent = await host.api.get('/me', key);
    expect(spent.status).toBe(429);
    expect(spent.body.message).toContain('credits');
  });

  it('are given back when a pipe refuses the input (400)', async () => {
    const key = await keyWithCredits(1);
    const bad = await host.api.get('/late/page?n=abc', key);
    expect(bad.status).toBe(400);
    const ok = await host.api.get('/late/page?n=2', key);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ n: 2 });
    expect((await host.api.get('/late/page?n=3', key)).status).toBe(429);
  });
});
