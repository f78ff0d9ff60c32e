import { HttpException, ServiceUnavailableException } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { CountedOutcomes, testSettings } from '../../test/support/factories.js';
import { context, fakes, ScriptedMeter, spentMeter, WINDOWS } from '../../test/support/spend-guard.js';
import { refuseBeforeHandler } from '../common/refusal.js';
import { TooManyRequests } from '../common/too-many-requests.js';
import type { KeyLimits } from './key-limits.js';
import type { MeterCharge } from './org-meter.js';

describe("SpendGuard and the org's meter of a route's @Charges", () => {
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
