import { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { describe, expect, it, vi } from 'vitest';
import { CountedOutcomes } from '../../test/support/outcomes.js';
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

function setup() {
  const writer = Object.create(LastUsedWriter.prototype) as LastUsedWriter;
  const touch = vi.spyOn(writer, 'touch').mockImplementation(() => undefined);
  const outcomes = new CountedOutcomes();
  return { guard: new LastUseGuard(new Reflector(), writer, outcomes.recorder), touch, outcomes };
}

function requestFor(kind: Principal['kind'] = 'api_key') {
  const user = testPrincipal({ kind, scopes: [] });
  if (kind !== 'session') markPendingUse(user, 'key-1', null, AT);
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

  it('keeps the pending use out of what a principal shows (not enumerable)', () => {
    const { user } = requestFor();
    expect(Object.getOwnPropertySymbols(user).every((s) => !Object.getOwnPropertyDescriptor(user, s)!.enumerable)).toBe(
      true,
    );
    expect(user).toEqual(testPrincipal({ kind: 'api_key', scopes: [] }));
  });
});
