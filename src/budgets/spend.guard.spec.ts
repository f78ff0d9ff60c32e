import { HttpException, ServiceUnavailableException } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { CountedOutcomes, testSettings } from '../../test/support/factories.js';
import { context, fakes, WINDOWS } from '../../test/support/spend-guard.js';
import { refuseBeforeHandler } from '../common/refusal.js';
import type { TooManyRequests } from '../common/too-many-requests.js';

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
    expect(headers['ratelimit-policy']).toBe('"search";q=5;w=1');
    expect(headers['ratelimit']).toBe('"search";r=1;t=1');
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
    expect(headers['retry-after']).toBe('86400');
    expect(raw.listenerCount('close')).toBe(0);
  });

  it("answers a refused window's 429 with Retry-After, and that window's effective window ending with it", () => {
    const { sut, log } = fakes(() => 2500);
    const { ctx, headers, raw } = context({ windows: WINDOWS, credits: { refill: null, epoch: 0 }, allows: null });
    expect(() => sut.canActivate(ctx)).toThrow(HttpException);
    expect(log).toEqual(['take default 1']);
    expect(headers['retry-after']).toBe('3');
    expect(headers['ratelimit-policy']).toBe('"default";q=10;w=1');
    expect(headers['ratelimit']).toBe('"default";r=1;t=3');
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
      expect(headers['ratelimit-policy']).toBe('"default";q=10;w=60');
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
      expect(headers['ratelimit-policy']).toBe('"default";q=1000000;w=1, "plan/default";q=10;w=60');
      expect(headers['retry-after']).toBe('5');
    });
  });
});
