import { EventEmitter } from 'node:events';
import { Controller, Get, HttpException, ServiceUnavailableException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { describe, expect, it } from 'vitest';
import { testPrincipal } from '../../test/support/principal.js';
import { CountedOutcomes, testSettings } from '../../test/support/factories.js';
import type { Principal } from '../auth/principal.js';
import { CreditLeases } from './credit-leases.js';
import { KeyLimitStore } from './key-limit.store.js';
import { PeriodicJobs } from '../common/periodic-jobs.js';
import type { RateWindow } from '../common/plan-rate-limits.js';
import { SpendGuard } from './spend.guard.js';
import { OrgMeter, type MeterCharge } from './org-meter.js';
import { Charges } from '../usage/charges.decorator.js';
import { refuseBeforeHandler } from '../common/refusal.js';
import { TooManyRequests } from '../common/too-many-requests.js';
import type { KeyLimits } from './key-limits.js';
import { RateLimited } from './rate-limited.decorator.js';
import { WindowLeases } from './window-leases.js';

@Controller('r')
class Routes {
  @Get('plain')
  plain() {}

  @Get('costly')
  @RateLimited('search', { cost: 3 })
  costly() {}

  @Get('charged')
  @Charges('captures', 2)
  charged() {}
}

/** An org meter that answers from a script and records what was charged and given back. */
class ScriptedMeter extends OrgMeter {
  constructor(
    private readonly log: string[],
    private readonly answer: () => MeterCharge | Promise<MeterCharge> = () => ({ meter: 'captures' }),
  ) {
    super();
  }
  charge(principal: Principal, meter: string, count: number) {
    this.log.push(`charge ${principal.orgId} ${meter} ${count}`);
    return this.answer();
  }
  giveBack(charge: MeterCharge) {
    this.log.push(`meter back ${(charge as { meter: string }).meter}`);
  }
}

const spentMeter = (response: unknown) =>
  new TooManyRequests(response, { budget: 'usage:captures', message: 'captures spent', retryAfter: 60 });

const WINDOWS = [
  { name: 'default', limit: 10, window_seconds: 1 },
  { name: 'search', limit: 5, window_seconds: 1 },
];

/** Leases that answer from a script and record what was taken and given back. */
function fakes(
  window: (name: string) => number | Promise<number>,
  credit: () => number | Promise<number> = () => 0,
  settings = testSettings(),
  outcomes = new CountedOutcomes(),
  meter?: (log: string[]) => OrgMeter,
) {
  const log: string[] = [];
  class ScriptedWindows extends WindowLeases {
    override take(_k: string, w: RateWindow, cost: number) {
      log.push(`take ${w.name} ${cost}`);
      return window(w.name);
    }
    override giveBack(_k: string, w: RateWindow, cost: number) {
      log.push(`back ${w.name} ${cost}`);
    }
    override remaining() {
      return 1;
    }
    override resetIn() {
      return 700;
    }
  }
  class ScriptedCredits extends CreditLeases {
    override take(_k: string, _c: unknown, cost: number) {
      log.push(`credits ${cost}`);
      return credit();
    }
    override giveBack(_k: string, _c: unknown, cost: number) {
      log.push(`credits back ${cost}`);
    }
  }
  const store = new KeyLimitStore(undefined as never);
  const sut = new SpendGuard(
    new Reflector(),
    new ScriptedWindows(store, settings.clock),
    new ScriptedCredits(store, new PeriodicJobs()),
    meter ? meter(log) : new ScriptedMeter(log),
    settings,
    outcomes.recorder,
  );
  return { log, sut, outcomes };
}

/** A raw Node response, as far as the guard uses it: headers, status, 'close' and whether it finished. */
class FakeResponse extends EventEmitter {
  headers: Record<string, string> = {};
  statusCode = 200;
  writableFinished = false;
  destroyed = false;
  setHeader(n: string, v: string) {
    this.headers[n] = v;
  }
  /** Ends the answer as Node does: finished, then 'close'. */
  end(status: number) {
    this.statusCode = status;
    this.writableFinished = true;
    this.emit('close');
  }
}

function context(
  limits: KeyLimits | undefined,
  handler: 'plain' | 'costly' | 'charged' = 'plain',
  ip = '203.0.113.5',
  kind: Principal['kind'] = 'api_key',
) {
  const principal: Principal = {
    ...testPrincipal({ kind, plan: 'free', orgId: 'o1', orgRole: 'owner' }),
    keyId: kind === 'session' ? undefined : 'k1',
    limits,
  };
  const raw = new FakeResponse();
  // Fastify's reply: the raw Node response under `.raw`.
  const reply = { raw, header: (n: string, v: string) => raw.setHeader(n, v) };
  return {
    ctx: new ExecutionContextHost([{ user: principal, ip }, reply], Routes, Routes.prototype[handler]),
    headers: raw.headers,
    raw,
  };
}

describe('SpendGuard', () => {
  it('passes a session, and a key with no limits and no plan default, synchronously and listening to nothing', () => {
    const { sut, log } = fakes(() => 0);
    for (const c of [context(undefined, 'plain', '203.0.113.5', 'session'), context(undefined)]) {
      expect(sut.canActivate(c.ctx)).toBe(true);
      expect(c.raw.listenerCount('close')).toBe(0);
    }
    expect(log).toEqual([]);
  });

  it("counts a host route's cost against its named window and the credits, synchronously when leases cover it", () => {
    const { sut, log } = fakes(() => 0);
    const { ctx, headers, raw } = context(
      { windows: WINDOWS, credits: { refill: null, epoch: 0 }, allows: null },
      'costly',
    );
    expect(sut.canActivate(ctx)).toBe(true);
    expect(log).toEqual(['take search 3', 'credits 3']);
    expect(headers['RateLimit-Policy']).toBe('"search";q=5;w=1');
    expect(headers['RateLimit']).toBe('"search";r=1;t=1');
    expect(raw.listenerCount('close')).toBe(1);
    raw.end(200);
    expect(log).toEqual(['take search 3', 'credits 3']);
  });

  it('limits a service key as any key: its windows and credits are taken', () => {
    const { sut, log } = fakes(() => 0);
    const { ctx } = context(
      { windows: WINDOWS, credits: { refill: null, epoch: 0 }, allows: null },
      'plain',
      '203.0.113.5',
      'service',
    );
    expect(sut.canActivate(ctx)).toBe(true);
    expect(log).toEqual(['take default 1', 'credits 1']);
  });

  it('spends once when the guard is listed twice (controller and route)', () => {
    const { sut, log } = fakes(() => 0);
    const { ctx, raw } = context({ windows: WINDOWS, credits: null, allows: null });
    expect(sut.canActivate(ctx)).toBe(true);
    expect(sut.canActivate(ctx)).toBe(true);
    expect(log).toEqual(['take default 1']);
    expect(raw.listenerCount('close')).toBe(1);
  });

  it('gives back the windows when the credits refuse, and answers 429 with Retry-After', () => {
    const { sut, log } = fakes(
      () => 0,
      () => -1,
    );
    const { ctx, headers, raw } = context({ windows: WINDOWS, credits: { refill: null, epoch: 0 }, allows: null });
    expect(() => sut.canActivate(ctx)).toThrow(HttpException);
    expect(log).toEqual(['take default 1', 'credits 1', 'back default 1']);
    expect(headers['Retry-After']).toBe('86400');
    expect(raw.listenerCount('close')).toBe(0);
  });

  it("answers a refused window's 429 with Retry-After, and that window's effective window ending with it", () => {
    const { sut, log } = fakes(() => 2500);
    const { ctx, headers, raw } = context({ windows: WINDOWS, credits: { refill: null, epoch: 0 }, allows: null });
    expect(() => sut.canActivate(ctx)).toThrow(HttpException);
    expect(log).toEqual(['take default 1']);
    expect(headers['Retry-After']).toBe('3');
    expect(headers['RateLimit-Policy']).toBe('"default";q=10;w=1');
    expect(headers['RateLimit']).toBe('"default";r=1;t=3');
    expect(raw.listenerCount('close')).toBe(0);
  });

  it('gives back windows and credits when a later budget or guard refuses the request before its handler, once', () => {
    const { sut, log } = fakes(() => 0);
    const { ctx, raw } = context({ windows: WINDOWS, credits: { refill: null, epoch: 0 }, allows: null });
    expect(sut.canActivate(ctx)).toBe(true);
    refuseBeforeHandler(ctx.getArgByIndex(0));
    raw.end(429);
    raw.emit('close');
    expect(log).toEqual(['take default 1', 'credits 1', 'back default 1', 'credits back 1']);
  });

  it.each([401, 403, 404, 409, 422, 429, 500])(
    'spends what it took when the handler answers %i (the handler started: nothing comes back)',
    (status) => {
      const { sut, log } = fakes(() => 0);
      const { ctx, raw } = context({ windows: WINDOWS, credits: { refill: null, epoch: 0 }, allows: null });
      expect(sut.canActivate(ctx)).toBe(true);
      raw.end(status);
      expect(log).toEqual(['take default 1', 'credits 1']);
    },
  );

  it('spends what it took when the client hangs up before the answer', () => {
    const { sut, log } = fakes(() => 0);
    const { ctx, raw } = context({ windows: WINDOWS, credits: { refill: null, epoch: 0 }, allows: null });
    expect(sut.canActivate(ctx)).toBe(true);
    raw.emit('close');
    expect(log).toEqual(['take default 1', 'credits 1']);
  });

  it('takes a lease asynchronously when this instance holds none, and gives back on a later refusal', async () => {
    const { sut, log } = fakes(
      () => Promise.resolve(0),
      () => Promise.resolve(0),
    );
    const { ctx, raw } = context({ windows: WINDOWS, credits: { refill: null, epoch: 0 }, allows: null });
    const result = sut.canActivate(ctx);
    expect(result).toBeInstanceOf(Promise);
    expect(await result).toBe(true);
    raw.end(400);
    expect(log).toEqual(['take default 1', 'credits 1', 'back default 1', 'credits back 1']);
  });

  it('refuses an address outside allowed_cidrs before any window is taken', () => {
    const { sut, log } = fakes(() => 0);
    const { ctx } = context({ windows: WINDOWS, credits: null, allows: (ip) => ip.startsWith('10.') });
    expect(() => sut.canActivate(ctx)).toThrow('allowed_cidrs');
    expect(log).toEqual([]);
  });

  it('counts each refusal as the key’s verification outcome (network, window, credits), and nothing for an admitted request', async () => {
    const outcomes = new CountedOutcomes();
    const limited = {
      windows: WINDOWS,
      credits: { refill: null, epoch: 0 },
      allows: (ip: string) => ip !== '192.0.2.1',
    };
    const requests = [
      { window: 0, credit: 0, ip: '192.0.2.1', admitted: false },
      { window: 2500, credit: 0, ip: '203.0.113.5', admitted: false },
      { window: 0, credit: -1, ip: '203.0.113.5', admitted: false },
      { window: 0, credit: -1, ip: '203.0.113.5', admitted: false },
      { window: 0, credit: 0, ip: '203.0.113.5', admitted: true },
    ];
    for (const r of requests) {
      const { sut } = fakes(
        () => r.window,
        () => r.credit,
        testSettings(),
        outcomes,
      );
      const { ctx } = context(limited, 'plain', r.ip);
      if (r.admitted) expect(sut.canActivate(ctx)).toBe(true);
      else expect(() => sut.canActivate(ctx)).toThrow(HttpException);
    }
    expect(await outcomes.counted()).toEqual({ k1: { ip_refused: 1, rate_limited: 1, credits_exhausted: 2 } });
  });

  it('fails closed with 503 when a lease cannot reach the database', async () => {
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const { sut } = fakes(() => Promise.reject(down));
    const { ctx } = context({ windows: WINDOWS, credits: null, allows: null });
    await expect(sut.canActivate(ctx)).rejects.toBeInstanceOf(ServiceUnavailableException);
  });

  describe('with plan windows', () => {
    const planned = testSettings({
      planRateLimits: { free: [{ name: 'default', limit: 10, window_seconds: 60 }], pro: null },
    });

    it('applies the plan window to a key with rate_limits: [] (no windows of its own)', () => {
      const { sut, log } = fakes(
        () => 0,
        () => 0,
        planned,
      );
      const { ctx, headers } = context({ windows: [], credits: null, allows: null });
      expect(sut.canActivate(ctx)).toBe(true);
      expect(log).toEqual(['take plan/default 1']);
      expect(headers['RateLimit-Policy']).toBe('"default";q=10;w=60');
    });

    it('applies the plan window in addition to a larger window of the key’s own, and names the plan’s when it refuses', () => {
      const { sut, log } = fakes(
        (name) => (name === 'plan/default' ? 5000 : 0),
        () => 0,
        planned,
      );
      const { ctx, headers } = context({
        windows: [{ name: 'default', limit: 1_000_000, window_seconds: 1 }],
        credits: null,
        allows: null,
      });
      let refusal: unknown;
      try {
        expect(sut.canActivate(ctx)).toBe(true);
      } catch (error) {
        refusal = error;
      }
      expect(log).toEqual(['take default 1', 'take plan/default 1', 'back default 1']);
      expect((refusal as TooManyRequests).budget).toBe('plan_window:default');
      expect(headers['RateLimit-Policy']).toBe('"default";q=1000000;w=1, "plan/default";q=10;w=60');
      expect(headers['Retry-After']).toBe('5');
    });
  });
  describe("the org's meter of the route's @Charges", () => {
    const limited = (): KeyLimits => ({ windows: WINDOWS, credits: { refill: null, epoch: 0 }, allows: null });

    it('charges a session and a key with no limits, synchronously, and spends it once the handler has started', () => {
      const { sut, log } = fakes(() => 0);
      for (const kind of ['session', 'api_key'] as const) {
        const { ctx, raw } = context(undefined, 'charged', '203.0.113.5', kind);
        expect(sut.canActivate(ctx)).toBe(true);
        expect(raw.listenerCount('close')).toBe(1);
        raw.end(404);
      }
      expect(log).toEqual(['charge o1 captures 2', 'charge o1 captures 2']);
    });

    it('charges no route without @Charges', () => {
      const { sut, log } = fakes(() => 0);
      expect(sut.canActivate(context(undefined, 'plain', '203.0.113.5', 'session').ctx)).toBe(true);
      expect(sut.canActivate(context(limited()).ctx)).toBe(true);
      expect(log).toEqual(['take default 1', 'credits 1']);
    });

    it('spends in order, windows, credits, then the meter, and gives all three back on a refusal before the handler', () => {
      const { sut, log } = fakes(() => 0);
      const { ctx, raw } = context(limited(), 'charged');
      expect(sut.canActivate(ctx)).toBe(true);
      expect(log).toEqual(['take default 1', 'credits 1', 'charge o1 captures 2']);
      raw.end(400);
      expect(log.slice(3)).toEqual(['back default 1', 'credits back 1', 'meter back captures']);
    });

    it('charges once when the guard is listed twice (controller and route)', () => {
      const { sut, log } = fakes(() => 0);
      const { ctx, raw } = context(undefined, 'charged', '203.0.113.5', 'session');
      expect(sut.canActivate(ctx)).toBe(true);
      expect(sut.canActivate(ctx)).toBe(true);
      expect(log).toEqual(['charge o1 captures 2']);
      expect(raw.listenerCount('close')).toBe(1);
    });

    it("gives the key's windows and credits back at once when the meter refuses, counting usage_exceeded", async () => {
      const outcomes = new CountedOutcomes();
      const { sut, log } = fakes(
        () => 0,
        () => 0,
        testSettings(),
        outcomes,
        (l) =>
          new ScriptedMeter(l, () => {
            throw spentMeter(null);
          }),
      );
      const { ctx, raw } = context(limited(), 'charged');
      expect(() => sut.canActivate(ctx)).toThrow(TooManyRequests);
      expect(log).toEqual(['take default 1', 'credits 1', 'charge o1 captures 2', 'back default 1', 'credits back 1']);
      expect(raw.listenerCount('close')).toBe(0);
      expect(await outcomes.counted()).toEqual({ k1: { usage_exceeded: 1 } });
    });

    it('charges asynchronously when the meter has to lease, and a refusal then gives back what the key took', async () => {
      const outcomes = new CountedOutcomes();
      const down = new ServiceUnavailableException('database away');
      let answer: () => Promise<MeterCharge> = () => Promise.resolve({ meter: 'captures' });
      const { sut, log } = fakes(
        () => 0,
        () => 0,
        testSettings(),
        outcomes,
        (l) => new ScriptedMeter(l, () => answer()),
      );
      const admitted = context(limited(), 'charged');
      const result = sut.canActivate(admitted.ctx);
      expect(result).toBeInstanceOf(Promise);
      expect(await result).toBe(true);
      refuseBeforeHandler(admitted.ctx.getArgByIndex(0));
      admitted.raw.end(403);
      expect(log.splice(0)).toEqual([
        'take default 1',
        'credits 1',
        'charge o1 captures 2',
        'back default 1',
        'credits back 1',
        'meter back captures',
      ]);

      answer = () => Promise.reject(down);
      await expect(sut.canActivate(context(limited(), 'charged').ctx)).rejects.toBe(down);
      expect(log).toEqual(['take default 1', 'credits 1', 'charge o1 captures 2', 'back default 1', 'credits back 1']);
      // The key itself was valid: the meter failed for another reason than a spent meter.
      expect(await outcomes.counted()).toEqual({ k1: { valid: 1 } });
    });

    it('never reaches the meter when a window or the credits refuse', () => {
      const { sut, log } = fakes(
        () => 0,
        () => -1,
      );
      expect(() => sut.canActivate(context(limited(), 'charged').ctx)).toThrow(HttpException);
      expect(log).toEqual(['take default 1', 'credits 1', 'back default 1']);
    });
  });
});
