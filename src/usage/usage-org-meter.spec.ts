import { HttpException, NotFoundException, ServiceUnavailableException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { describe, expect, it } from 'vitest';
import { testPrincipal } from '../../test/support/principal.js';
import { TestClock } from '../../test/support/clock.js';
import { ChargesMeta } from '../budgets/charges.meta.js';
import { UnknownOrgError, UsageLimitExceededError } from '../common/meters.js';
import type { TooManyRequests } from '../common/too-many-requests.js';
import { Settings } from '../settings/settings.js';
import { Charges } from './charges.decorator.js';
import { UsageOrgMeter } from './usage-org-meter.js';
import type { ChargeResult, UsageService } from './usage.service.js';

class Handler {
  @Charges('captures')
  capture() {}
}

@Charges('imports', 2)
class ChargedController {
  @Charges('imports', 3)
  own() {}

  inherited() {}
}

const principal = testPrincipal({ orgId: 'o', orgRole: 'owner' });
const clock = new TestClock('2030-01-01T23:00:00.000Z');
const settings = new Settings({ session: { secret: 'x'.repeat(32) }, clock });
const chargeOf = (meter: 'captures' | 'imports', count: number) =>
  ({ orgId: 'o', meter, count, day: '2030-01-01' }) as ChargeResult;

type FakeUsage = Pick<UsageService, 'chargeNow' | 'refundEventually'>;
const meterWith = (usage: Partial<FakeUsage>) => new UsageOrgMeter(usage as UsageService, settings);

function reply() {
  const headers: Record<string, string> = {};
  return { headers, response: { header: (n: string, v: string) => (headers[n] = v) } };
}

describe('@Charges', () => {
  it('is a declaration only: typed metadata on a route and on a controller, a route’s own spec winning', () => {
    const reflector = new Reflector();
    expect(reflector.get(ChargesMeta, Handler.prototype.capture)).toEqual({ meter: 'captures', count: 1 });
    // No interceptor: the auth decorators' SpendGuard reads the declaration.
    expect(Reflect.getMetadataKeys(Handler.prototype.capture)).toEqual([ChargesMeta.KEY]);
    const spec = (h: () => void) => reflector.getAllAndOverride(ChargesMeta, [h, ChargedController]);
    expect([spec(ChargedController.prototype.own), spec(ChargedController.prototype.inherited)]).toEqual([
      { meter: 'imports', count: 3 },
      { meter: 'imports', count: 2 },
    ]);
  });
});

describe('UsageOrgMeter', () => {
  it('charges the principal’s org as the principal, so the charge is attributed to its key or user', async () => {
    const calls: unknown[][] = [];
    const meter = meterWith({ chargeNow: async (...args) => (calls.push(args), chargeOf('captures', 1)) });
    const keyPrincipal = testPrincipal({ orgId: 'o', orgRole: 'owner', keyId: 'k' });

    expect(await meter.charge(keyPrincipal, 'captures', 1, reply().response)).toEqual(chargeOf('captures', 1));

    expect(calls).toEqual([['o', 'captures', 1, keyPrincipal]]);
  });

  it('answers synchronously, with no promise, when the charge is (a leased block covered it)', () => {
    const charge = chargeOf('captures', 1);
    const answer = meterWith({ chargeNow: () => charge }).charge(principal, 'captures', 1, reply().response);
    expect(answer).toBe(charge);
  });

  it('answers a spent meter with 429 naming usage:<meter>, Retry-After in seconds until it resets, at once or later', async () => {
    const spent = new UsageLimitExceededError('captures', 2, 2, 1, new Date('2030-01-02T00:00:00.000Z'));
    const sync = reply();
    let thrown: unknown;
    try {
      void meterWith({
        chargeNow: () => {
          throw spent;
        },
      }).charge(principal, 'captures', 1, sync.response);
    } catch (error) {
      thrown = error;
    }
    const later = reply();
    const rejected = await Promise.resolve(
      meterWith({ chargeNow: () => Promise.reject(spent) }).charge(principal, 'captures', 1, later.response),
    ).catch((e: unknown) => e);

    for (const [refusal, headers] of [
      [thrown, sync.headers],
      [rejected, later.headers],
    ] as const) {
      expect((refusal as HttpException).getStatus()).toBe(429);
      expect((refusal as TooManyRequests).budget).toBe('usage:captures');
      expect((refusal as HttpException).getResponse()).toMatchObject({ statusCode: 429, error: 'Too Many Requests' });
      expect(headers['Retry-After']).toBe('3600');
    }
  });

  it('answers 400 for a principal without an org, without charging', () => {
    let charged = false;
    const meter = meterWith({ chargeNow: () => ((charged = true), chargeOf('captures', 1)) });
    expect(() => meter.charge(testPrincipal({ orgId: null }), 'captures', 1, reply().response)).toThrow(
      expect.objectContaining({ status: 400 }),
    );
    expect(charged).toBe(false);
  });

  it('answers 404 for an org the directory does not know, and 503 with the database away (a host without our filter never answers 500)', async () => {
    const outage = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const charge = (error: Error) =>
      Promise.resolve(
        meterWith({ chargeNow: () => Promise.reject(error) }).charge(principal, 'captures', 1, reply().response),
      ).catch((e: unknown) => e);
    expect(await charge(new UnknownOrgError('o'))).toBeInstanceOf(NotFoundException);
    expect(await charge(outage)).toBeInstanceOf(ServiceUnavailableException);
  });

  it('lets any other failure through unchanged', async () => {
    const bug = new TypeError('boom');
    const meter = meterWith({ chargeNow: () => Promise.reject(bug) });
    await expect(meter.charge(principal, 'captures', 1, reply().response)).rejects.toBe(bug);
  });

  it('gives a charge back through refundEventually (to the block, or kept until it lands), and never throws when that fails', async () => {
    const refunds: unknown[] = [];
    const charge = chargeOf('captures', 1);
    meterWith({ refundEventually: async (c) => void refunds.push(c) }).giveBack(charge);
    expect(refunds).toEqual([charge]);
    const failing = meterWith({ refundEventually: () => Promise.reject(new Error('refund bug')) });
    expect(() => failing.giveBack(charge)).not.toThrow();
    // The failure is logged, not left as an unhandled rejection.
    await new Promise((resolve) => setImmediate(resolve));
  });
});
