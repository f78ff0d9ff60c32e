import { Get, HttpException, ServiceUnavailableException } from '@nestjs/common';
import { INTERCEPTORS_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { lastValueFrom, of, throwError } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../auth/principal.js';
import { testPrincipal } from '../../test/support/principal.js';
import { Settings } from '../settings/settings.js';
import { ChargeGate, ChargeInterceptor, Charges, ChargesMeta } from './charges.decorator.js';
import type { UsageService } from './usage.service.js';

class Handler {
  @ChargesMeta({ meter: 'captures', count: 1 })
  capture() {}
}

function context(principal: Principal) {
  const headers: Record<string, string> = {};
  const response = { header: (n: string, v: string) => (headers[n] = v) };
  const ctx = new ExecutionContextHost([{ user: principal }, response], Handler, Handler.prototype.capture);
  return { ctx, headers };
}

const principal = testPrincipal({ orgId: 'o', orgRole: 'owner' });
const settings = new Settings({ session: { secret: 'x'.repeat(32) } });

describe('ChargeInterceptor', () => {
  it('turns a database outage while charging into a 503, so a host without our filter does not answer 500', async () => {
    const outage = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const usage = { charge: async () => Promise.reject(outage) } as unknown as UsageService;
    const interceptor = new ChargeInterceptor(new Reflector(), new ChargeGate(usage, settings));
    const { ctx } = context(principal);
    await expect(interceptor.intercept(ctx, { handle: () => of('done') })).rejects.toBeInstanceOf(ServiceUnavailableException);
  });

  it('lets any other failure through unchanged', async () => {
    const bug = new TypeError('boom');
    const usage = { charge: async () => Promise.reject(bug) } as unknown as UsageService;
    const interceptor = new ChargeInterceptor(new Reflector(), new ChargeGate(usage, settings));
    const { ctx } = context(principal);
    await expect(interceptor.intercept(ctx, { handle: () => of('done') })).rejects.toBe(bug);
    expect(bug).not.toBeInstanceOf(HttpException);
  });

  it('gives the charge back through refundEventually when the handler fails, so an outage keeps it for retry', async () => {
    const refunds: unknown[] = [];
    const charge = { orgId: 'o', meter: 'captures', count: 1, day: '2030-01-01' };
    const usage = {
      charge: async () => charge,
      refundEventually: async (c: unknown) => void refunds.push(c),
    } as unknown as UsageService;
    const interceptor = new ChargeInterceptor(new Reflector(), new ChargeGate(usage, settings));
    const failure = new Error('handler failed');
    const observable = await interceptor.intercept(context(principal).ctx, { handle: () => throwError(() => failure) });
    await expect(lastValueFrom(observable)).rejects.toBe(failure);
    expect(refunds).toEqual([charge]);
  });
});

describe('ChargeInterceptor attribution', () => {
  it('charges as the request’s principal, so the charge is attributed to its key or user', async () => {
    const calls: unknown[][] = [];
    const usage = { charge: async (...args: unknown[]) => (calls.push(args), { orgId: 'o', meter: 'captures', count: 1 }) } as unknown as UsageService;
    const interceptor = new ChargeInterceptor(new Reflector(), new ChargeGate(usage, settings));
    const keyPrincipal = testPrincipal({ orgId: 'o', orgRole: 'owner', keyId: 'k' });
    const { ctx } = context(keyPrincipal);

    await interceptor.intercept(ctx, { handle: () => of('done') });

    expect(calls).toEqual([['o', 'captures', 1, keyPrincipal]]);
  });
});

describe('@Charges', () => {
  it('adds no interceptor to the route: with any interceptor Nest runs its rxjs pipeline on every request', () => {
    class Routes {
      @Get('x')
      @Charges('asks')
      x() {}
    }
    @Charges('imports')
    class ChargedController {
      @Get('y')
      y() {}
    }
    for (const handler of [Routes.prototype.x, ChargedController.prototype.y]) {
      expect(Reflect.getMetadata(INTERCEPTORS_METADATA, handler)).toBeUndefined();
      expect(Reflect.getMetadata(PATH_METADATA, handler)).toBeDefined();
    }
    expect(Reflect.getMetadata(INTERCEPTORS_METADATA, ChargedController)).toBeUndefined();
    expect(new Reflector().get(ChargesMeta, Routes.prototype.x)).toEqual({ meter: 'asks', count: 1 });
  });
});
