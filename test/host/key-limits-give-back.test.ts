import http from 'node:http';
import { Controller, Get, NotFoundException, ParseIntPipe, Post, Query } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Authenticated, Charges, RequireScopes } from '../../src/index.js';
import { createSeededDatabase, type TestDatabase } from '../support/database.js';
import type { Seeder } from '../support/seed.js';
import { PLATFORMS, startHost, type HostApp } from './support/host-app.js';

/**
 * The one give-back rule on host routes: what a key's budgets took comes back only when the
 * request is refused before its handler starts (the meters of @Charges written above the auth
 * decorator, a pipe, a scope refusal after a controller-level budget). Once the handler has
 * started it is spent: on an error status, and when the client hangs up.
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

  @Get('missing')
  @RequireScopes('decisions:write')
  missing(): never {
    throw new NotFoundException('No such decision');
  }

  /** Answers a moment after it starts, by when the test's client has gone. */
  @Get('slow')
  @RequireScopes('decisions:write')
  async slow(): Promise<{ ok: true }> {
    started += 1;
    await new Promise<void>((resolve) => setTimeout(resolve, 300));
    finished += 1;
    return { ok: true };
  }
}

let started = 0;
let finished = 0;

/** A budget taken at the controller, then a scope the key lacks refused at the route. */
@Controller('scoped')
@Authenticated()
class ScopedLaterController {
  @Get('admin')
  @RequireScopes('decisions:read')
  admin(): { ok: true } {
    return { ok: true };
  }
}

let db: TestDatabase;
let seed: Seeder;
beforeAll(async () => ({ db, seed } = await createSeededDatabase()));
afterAll(async () => db?.drop());

describe.each(PLATFORMS)('a key’s credits on a request refused after the guard, on %s', (platform) => {
  let host: HostApp;
  beforeAll(async () => {
    host = await startHost({
      platform,
      databaseUrl: db.url,
      hostControllers: [LateRefusalsController, ScopedLaterController],
    });
  });
  afterAll(async () => host?.close());

  const keyWith = async (settings: Record<string, unknown>) => {
    const w = await seed.world('owner');
    const minted = await host.api.post('/api-keys', w.session, {
      org_id: w.orgId,
      scopes: ['decisions:write'],
      ...settings,
    });
    expect(minted.status).toBe(201);
    return minted.body.key as string;
  };
  const keyWithCredits = (remaining: number) => keyWith({ credits: { remaining } });

  /** Starts GET /late/slow, waits until its handler runs, then hangs up while it works, and waits for it to finish. */
  const hangUpDuringHandler = async (key: string) => {
    const before = started;
    const done = finished;
    // A connection of its own (no keep-alive pool), closed by the client mid-handler.
    const request = http.get(`${host.api.baseUrl}/late/slow`, {
      agent: false,
      headers: { authorization: `Bearer ${key}` },
    });
    const gone = new Promise((resolve) => request.on('error', resolve).on('close', resolve));
    await expect.poll(() => started).toBe(before + 1);
    request.destroy();
    await gone;
    await expect.poll(() => finished).toBe(done + 1);
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

  it('are spent when the handler has started and answers an error (404)', async () => {
    const key = await keyWithCredits(1);
    expect((await host.api.get('/late/missing', key)).status).toBe(404);
    const spent = await host.api.get('/me', key);
    expect(spent.status).toBe(429);
    expect(spent.body.budget).toBe('key_credits');
  });

  it('are given back when a scope is refused after a controller-level budget took them (403)', async () => {
    const key = await keyWithCredits(1);
    expect((await host.api.get('/scoped/admin', key)).status).toBe(403);
    expect((await host.api.get('/me', key)).status).toBe(200);
    expect((await host.api.get('/me', key)).status).toBe(429);
  });

  it('are spent, credit and window token both, when the client hangs up during a host handler', async () => {
    const credited = await keyWithCredits(1);
    await hangUpDuringHandler(credited);
    const noCredit = await host.api.get('/me', credited);
    expect(noCredit.status).toBe(429);
    expect(noCredit.body.budget).toBe('key_credits');

    const windowed = await keyWith({ rate_limits: [{ name: 'default', limit: 1, window_seconds: 3600 }] });
    await hangUpDuringHandler(windowed);
    const noToken = await host.api.get('/me', windowed);
    expect(noToken.status).toBe(429);
    expect(noToken.body.budget).toBe('key_window:default');
    expect(noToken.headers.get('retry-after')).not.toBeNull();
  });
});
