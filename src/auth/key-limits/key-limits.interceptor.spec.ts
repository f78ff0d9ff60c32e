import { Controller, Get, HttpException, ServiceUnavailableException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { from, lastValueFrom, mergeAll, of, throwError, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { testPrincipal } from '../../../test/support/principal.js';
import { testSettings } from '../../../test/support/factories.js';
import type { Principal } from '../principal.js';
import { CreditLeases } from './credit-leases.js';
import { KeyLimitStore } from './key-limit.store.js';
import { PeriodicJobs } from '../../common/periodic-jobs.js';
import type { RateWindow } from '../../common/plan-rate-limits.js';
import { KeyLimitsInterceptor } from './key-limits.interceptor.js';
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
}

const WINDOWS = [
  { name: 'default', limit: 10, window_seconds: 1 },
  { name: 'search', limit: 5, window_seconds: 1 },
];

/** Leases that answer from a script and record what was taken and given back. */
function fakes(window: (name: string) => number | Promise<number>, credit: () => number | Promise<number> = () => 0) {
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
  }
  class ScriptedCredits extends CreditLeases {
    override take(_k: string, _c: unknown, cost: number) {
      log.push(`credits ${cost}`);
      return credit();
    }
    override giveBack(_k: string, cost: number) {
      log.push(`credits back ${cost}`);
    }
  }
  const store = new KeyLimitStore(undefined as never);
  const sut = new KeyLimitsInterceptor(new Reflector(), new ScriptedWindows(store), new ScriptedCredits(store, new PeriodicJobs()), testSettings());
  return { log, sut };
}

function context(limits: KeyLimits, handler: 'plain' | 'costly' = 'plain', ip = '203.0.113.5') {
  const principal: Principal = { ...testPrincipal({ kind: 'api_key' }), keyId: 'k1', limits };
  const headers: Record<string, string> = {};
  const response = { header: (n: string, v: string) => (headers[n] = v) };
  return { ctx: new ExecutionContextHost([{ user: principal, ip }, response], Routes, Routes.prototype[handler]), headers };
}

const run = async (result: Observable<unknown> | Promise<Observable<unknown>>) => lastValueFrom(from(Promise.resolve(result)).pipe(mergeAll()));

describe('KeyLimitsInterceptor', () => {
  it("counts a host route's cost against its named window and the credits, synchronously when leases cover it", async () => {
    const { sut, log } = fakes(() => 0);
    const { ctx, headers } = context({ windows: WINDOWS, credits: { refill: null, epoch: 0 }, allows: null }, 'costly');
    const result = sut.intercept(ctx, { handle: () => of('ok') });
    expect(result).not.toBeInstanceOf(Promise);
    expect(await run(result)).toBe('ok');
    expect(log).toEqual(['take search 3', 'credits 3']);
    expect(headers['RateLimit-Policy']).toBe('"search";q=5;w=1');
  });

  it('gives back the windows when the credits refuse, and answers 429 with Retry-After', async () => {
    const { sut, log } = fakes(() => 0, () => -1);
    const { ctx, headers } = context({ windows: WINDOWS, credits: { refill: null, epoch: 0 }, allows: null });
    expect(() => sut.intercept(ctx, { handle: () => of('ok') })).toThrow(HttpException);
    expect(log).toEqual(['take default 1', 'credits 1', 'back default 1']);
    expect(headers['Retry-After']).toBe('86400');
  });

  it('gives back windows and credits when the route fails after admission', async () => {
    const { sut, log } = fakes(() => 0);
    const { ctx } = context({ windows: WINDOWS, credits: { refill: null, epoch: 0 }, allows: null });
    await expect(run(sut.intercept(ctx, { handle: () => throwError(() => new Error('meter refused')) }))).rejects.toThrow('meter refused');
    expect(log.slice(-2)).toEqual(['back default 1', 'credits back 1']);
  });

  it('refuses an address outside allowed_cidrs before any window is taken', () => {
    const { sut, log } = fakes(() => 0);
    const { ctx } = context({ windows: WINDOWS, credits: null, allows: (ip) => ip.startsWith('10.') });
    expect(() => sut.intercept(ctx, { handle: () => of('ok') })).toThrow('allowed_cidrs');
    expect(log).toEqual([]);
  });

  it('fails closed with 503 when a lease cannot reach the database', async () => {
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const { sut } = fakes(() => Promise.reject(down));
    const { ctx } = context({ windows: WINDOWS, credits: null, allows: null });
    await expect(run(sut.intercept(ctx, { handle: () => of('ok') }))).rejects.toBeInstanceOf(ServiceUnavailableException);
  });
});
