import {
  BadRequestException,
  ConflictException,
  Controller,
  Get,
  HttpException,
  NotFoundException,
  ServiceUnavailableException,
} from '@nestjs/common';
import { refusedBeforeHandler } from '../common/refusal.js';
import { INTERCEPTORS_METADATA } from '@nestjs/common/constants.js';
import { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { from, lastValueFrom, mergeAll, of, throwError, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../auth/principal.js';
import { testPrincipal } from '../../test/support/principal.js';
import { TestClock } from '../../test/support/clock.js';
import { CountedOutcomes } from '../../test/support/outcomes.js';
import { OutcomeAfterGuardsMeta } from '../auth/auth.metadata.js';
import { UsageLimitExceededError } from '../common/meters.js';
import { Settings } from '../settings/settings.js';
import { ChargeInterceptor, ChargesMeta } from './charge.interceptor.js';
import { Charges } from './charges.decorator.js';
import type { ChargeResult, UsageService } from './usage.service.js';

@Controller('h')
class Handler {
  @Get()
  @Charges('captures')
  capture() {}
}

@Controller('c')
@Charges('imports', 2)
class ChargedController {
  @Get('own')
  @Charges('imports', 3)
  own() {}

  @Get('inherited')
  inherited() {}
}

function context(principal: Principal, controller: object = Handler, handler: object = Handler.prototype.capture) {
  const headers: Record<string, string> = {};
  const response = { header: (n: string, v: string) => (headers[n] = v) };
  const ctx = new ExecutionContextHost([{ user: principal }, response], controller as never, handler as never);
  return { ctx, headers };
}

const principal = testPrincipal({ orgId: 'o', orgRole: 'owner' });
const clock = new TestClock('2030-01-01T23:00:00.000Z');
const settings = new Settings({ session: { secret: 'x'.repeat(32) }, clock });
const chargeOf = (meter: 'captures' | 'imports', count: number) =>
  ({ orgId: 'o', meter, count, day: '2030-01-01' }) as ChargeResult;

type FakeUsage = Pick<UsageService, 'chargeNow' | 'refundEventually'>;
const interceptorWith = (usage: Partial<FakeUsage>, outcomes = new CountedOutcomes()) =>
  new ChargeInterceptor(new Reflector(), usage as UsageService, settings, outcomes.recorder);

describe('@Charges', () => {
  it('sets typed metadata and the one interceptor on a route and on a controller, a route’s own spec winning', () => {
    const reflector = new Reflector();
    expect(reflector.get(ChargesMeta, Handler.prototype.capture)).toEqual({ meter: 'captures', count: 1 });
    // Only the charge: the key's own limits are a guard of the auth decorators, so they run before it.
    expect(Reflect.getMetadata(INTERCEPTORS_METADATA, Handler.prototype.capture)).toEqual([ChargeInterceptor]);
    expect(Reflect.getMetadata(INTERCEPTORS_METADATA, ChargedController)).toEqual([ChargeInterceptor]);
    // The key's verification outcome waits for the charge (LastUseGuard reads this).
    expect(reflector.getAllAndOverride(OutcomeAfterGuardsMeta, [Handler.prototype.capture, Handler])).toBe(true);
    expect(reflector.get(OutcomeAfterGuardsMeta, ChargedController)).toBe(true);
    const spec = (h: () => void) => reflector.getAllAndOverride(ChargesMeta, [h, ChargedController]);
    expect([spec(ChargedController.prototype.own), spec(ChargedController.prototype.inherited)]).toEqual([
      { meter: 'imports', count: 3 },
      { meter: 'imports', count: 2 },
    ]);
  });
});

describe('ChargeInterceptor', () => {
  it('charges as the request’s principal, so the charge is attributed to its key or user', async () => {
    const calls: unknown[][] = [];
    const interceptor = interceptorWith({ chargeNow: async (...args) => (calls.push(args), chargeOf('captures', 1)) });
    const keyPrincipal = testPrincipal({ orgId: 'o', orgRole: 'owner', keyId: 'k' });

    await lastValueFrom(await interceptor.intercept(context(keyPrincipal).ctx, { handle: () => of('done') }));

    expect(calls).toEqual([['o', 'captures', 1, keyPrincipal]]);
  });

  it('charges once when both the controller and the route carry @Charges (the interceptor then runs twice)', async () => {
    const calls: unknown[][] = [];
    const interceptor = interceptorWith({ chargeNow: async (...args) => (calls.push(args), chargeOf('imports', 3)) });
    const { ctx } = context(principal, ChargedController, ChargedController.prototype.own);

    // As Nest chains them: the controller's interceptor hands on to the route's.
    const routeLevel = {
      handle: () => from(Promise.resolve(interceptor.intercept(ctx, { handle: () => of('done') }))).pipe(mergeAll()),
    };
    expect(await lastValueFrom(await interceptor.intercept(ctx, routeLevel))).toBe('done');

    expect(calls).toEqual([['o', 'imports', 3, principal]]);
  });

  it('answers 429 with Retry-After in seconds until the meter resets, without running the handler', async () => {
    const resetsAt = new Date('2030-01-02T00:00:00.000Z');
    const interceptor = interceptorWith({
      chargeNow: async () => Promise.reject(new UsageLimitExceededError('captures', 2, 2, 1, resetsAt)),
    });
    const { ctx, headers } = context(principal);
    let ran = false;

    const refused = await Promise.resolve(
      interceptor.intercept(ctx, { handle: () => ((ran = true), of('done')) }),
    ).catch((e: unknown) => e);

    expect(refused).toBeInstanceOf(HttpException);
    expect((refused as HttpException).getStatus()).toBe(429);
    expect((refused as HttpException).getResponse()).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
    expect(headers['Retry-After']).toBe('3600');
    expect(ran).toBe(false);
  });

  it('turns a database outage while charging into a 503, so a host without our filter does not answer 500', async () => {
    const outage = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const interceptor = interceptorWith({ chargeNow: async () => Promise.reject(outage) });
    await expect(interceptor.intercept(context(principal).ctx, { handle: () => of('done') })).rejects.toBeInstanceOf(
      ServiceUnavailableException,
    );
  });

  it('lets any other failure through unchanged', async () => {
    const bug = new TypeError('boom');
    const interceptor = interceptorWith({ chargeNow: async () => Promise.reject(bug) });
    await expect(interceptor.intercept(context(principal).ctx, { handle: () => of('done') })).rejects.toBe(bug);
    expect(bug).not.toBeInstanceOf(HttpException);
  });

  it('gives the charge back through refundEventually when a pipe refuses the input (400), then lets the error through', async () => {
    const refunds: unknown[] = [];
    const charge = chargeOf('captures', 1);
    const interceptor = interceptorWith({
      chargeNow: async () => charge,
      refundEventually: async (c) => void refunds.push(c),
    });
    const failure = new BadRequestException('n must be an integer');

    const observable = await interceptor.intercept(context(principal).ctx, { handle: () => throwError(() => failure) });

    await expect(lastValueFrom(observable)).rejects.toBe(failure);
    expect(refunds).toEqual([charge]);
  });

  it.each([
    ['a 500', new Error('handler failed')],
    ['a 404', new NotFoundException()],
    ['a 409', new ConflictException()],
  ])('keeps the charge when the handler has started and fails with %s', async (_, failure) => {
    const refunds: unknown[] = [];
    const interceptor = interceptorWith({
      chargeNow: async () => chargeOf('captures', 1),
      refundEventually: async (c) => void refunds.push(c),
    });
    const observable = await interceptor.intercept(context(principal).ctx, { handle: () => throwError(() => failure) });
    await expect(lastValueFrom(observable)).rejects.toBe(failure);
    expect(refunds).toEqual([]);
  });

  it('marks a request its meter refuses, so what the key took before it goes back', async () => {
    const interceptor = interceptorWith({
      chargeNow: async () => {
        throw new UsageLimitExceededError('captures', 1, 1, 1, new Date('2030-01-02T00:00:00.000Z'));
      },
    });
    const { ctx } = context(principal);
    await expect(interceptor.intercept(ctx, { handle: () => of(1) })).rejects.toBeInstanceOf(HttpException);
    expect(refusedBeforeHandler(ctx.getArgByIndex(0), 429)).toBe(true);
  });

  it('settles a deferred key outcome: usage_exceeded when the meter refuses, valid when charged or refused otherwise', async () => {
    const outcomes = new CountedOutcomes();
    const keyPrincipal = testPrincipal({ orgId: 'o', orgRole: 'owner', keyId: 'k' });
    const spent = new UsageLimitExceededError('captures', 1, 1, 1, new Date('2030-01-02T00:00:00.000Z'));
    const outage = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    for (const charge of [
      async () => chargeOf('captures', 1),
      () => Promise.reject(spent),
      () => Promise.reject(outage),
    ]) {
      const { ctx } = context(keyPrincipal);
      outcomes.recorder.defer(ctx.getArgByIndex(0), 'k');
      await Promise.resolve(
        interceptorWith({ chargeNow: charge }, outcomes).intercept(ctx, { handle: () => of(1) }),
      ).catch(() => undefined);
    }
    // A request LastUseGuard did not defer (no key, or a route without the guards) counts nothing here.
    await interceptorWith({ chargeNow: async () => chargeOf('captures', 1) }, outcomes).intercept(
      context(principal).ctx,
      {
        handle: () => of(1),
      },
    );
    expect(await outcomes.counted()).toEqual({ k: { valid: 2, usage_exceeded: 1 } });
  });

  it('answers synchronously, with no promise, when the charge is (a leased block covered it)', async () => {
    const interceptor = interceptorWith({ chargeNow: () => chargeOf('captures', 1) });

    const answer = interceptor.intercept(context(principal).ctx, { handle: () => of('done') });

    expect(answer).not.toBeInstanceOf(Promise);
    expect(await lastValueFrom(answer as Observable<unknown>)).toBe('done');
  });

  it('answers a synchronous refusal with the 429 thrown at once, the handler never run', () => {
    const resetsAt = new Date('2030-01-02T00:00:00.000Z');
    const interceptor = interceptorWith({
      chargeNow: () => {
        throw new UsageLimitExceededError('captures', 2, 2, 1, resetsAt);
      },
    });
    let ran = false;

    expect(() => interceptor.intercept(context(principal).ctx, { handle: () => ((ran = true), of('done')) })).toThrow(
      HttpException,
    );
    expect(ran).toBe(false);
  });

  it('keeps the request’s own error when the refund itself fails', async () => {
    const interceptor = interceptorWith({
      chargeNow: async () => chargeOf('captures', 1),
      refundEventually: async () => Promise.reject(new Error('refund bug')),
    });
    const failure = new BadRequestException('bad input');
    const observable = await interceptor.intercept(context(principal).ctx, { handle: () => throwError(() => failure) });
    await expect(lastValueFrom(observable)).rejects.toBe(failure);
  });
});
