import { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { describe, expect, it, vi } from 'vitest';
import { CountedOutcomes } from '../../test/support/outcomes.js';
import { TestClock } from '../../test/support/clock.js';
import { testSettings } from '../../test/support/factories.js';
import { testPrincipal } from '../../test/support/principal.js';
import { Authenticated, RequireScopes } from './auth.decorators.js';
import { LastUseGuard, markPendingUse } from './last-use.guard.js';
import { LastUsedWriter } from './last-used-writer.js';
import type { Principal } from './principal.js';

@Authenticated()
class Routes {
  @RequireScopes('decisions:read')
  twice() {}
}
class Single {
  @Authenticated()
  once() {}
}

const AT = new Date('2031-05-17T08:30:00Z');
/** The guard's own clock: an outcome with no use held for the writer is counted at the time it is admitted. */
const LATER = new Date('2031-05-17T09:10:00Z');

function setup() {
  const writer = Object.create(LastUsedWriter.prototype) as LastUsedWriter;
  const touch = vi.spyOn(writer, 'touch').mockImplementation(() => undefined);
  const outcomes = new CountedOutcomes();
  const guard = new LastUseGuard(
    new Reflector(),
    writer,
    outcomes.recorder,
    testSettings({ clock: new TestClock(LATER) }),
  );
  return { guard, touch, outcomes };
}

function requestFor(kind: Principal['kind'] = 'api_key', held = true) {
  const user = testPrincipal({ kind, keyId: kind === 'session' ? undefined : 'key-1', scopes: [] });
  if (kind !== 'session' && held) markPendingUse(user, 'key-1', null, AT);
  return { user };
}

describe('LastUseGuard', () => {
  it('records an admitted key’s use once, and nothing for a session', () => {
    const { guard, touch } = setup();
    const request = requestFor();
    const ctx = new ExecutionContextHost([request, {}], Single, Single.prototype.once);
    expect(guard.canActivate(ctx)).toBe(true);
    expect(touch).toHaveBeenCalledExactlyOnceWith('key-1', null, AT);
    expect(guard.canActivate(ctx)).toBe(true);
    expect(touch).toHaveBeenCalledTimes(1);
    expect(
      guard.canActivate(new ExecutionContextHost([requestFor('session'), {}], Single, Single.prototype.once)),
    ).toBe(true);
    expect(touch).toHaveBeenCalledTimes(1);
  });

  it('on a route listing the guards twice, records on the last listing (after the route’s scope check)', () => {
    const { guard, touch } = setup();
    const request = requestFor();
    const ctx = new ExecutionContextHost([request, {}], Routes, Routes.prototype.twice);
    guard.canActivate(ctx);
    expect(touch).not.toHaveBeenCalled();
    guard.canActivate(ctx);
    expect(touch).toHaveBeenCalledTimes(1);
  });

  it('counts an admitted key’s verification as valid once, at the time the verifier saw it, on the last listing', async () => {
    const { guard, outcomes } = setup();
    const request = requestFor();
    const ctx = new ExecutionContextHost([request, {}], Routes, Routes.prototype.twice);
    guard.canActivate(ctx);
    expect(await outcomes.counted()).toEqual({});
    guard.canActivate(ctx);
    guard.canActivate(new ExecutionContextHost([requestFor('session'), {}], Single, Single.prototype.once));
    expect(await outcomes.counted()).toEqual({ 'key-1': { valid: 1 } });
    expect(outcomes.batches.flat().map((r) => r.hour)).toEqual([new Date('2031-05-17T08:00:00Z')]);
  });

  it('counts a key whose use the writer would not write (inside its minute) as valid, at admission, without a touch', async () => {
    const { guard, touch, outcomes } = setup();
    const request = requestFor('api_key', false);
    const ctx = new ExecutionContextHost([request, {}], Routes, Routes.prototype.twice);
    guard.canActivate(ctx);
    guard.canActivate(ctx);
    guard.canActivate(ctx);
    expect(touch).not.toHaveBeenCalled();
    expect(await outcomes.counted()).toEqual({ 'key-1': { valid: 1 } });
    expect(outcomes.batches.flat().map((r) => r.hour)).toEqual([new Date('2031-05-17T09:00:00Z')]);
  });

  it('keeps the pending use out of what a principal shows (not enumerable)', () => {
    const { user } = requestFor();
    expect(Object.getOwnPropertySymbols(user).every((s) => !Object.getOwnPropertyDescriptor(user, s)!.enumerable)).toBe(
      true,
    );
    expect(user).toEqual(testPrincipal({ kind: 'api_key', keyId: 'key-1', scopes: [] }));
  });
});
