import { UnauthorizedException } from '@nestjs/common';
import type { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { Strategy } from 'passport';
import { describe, expect, it, vi } from 'vitest';
import type { AuthFailureThrottle } from './auth-failure-throttle.js';
import type { AuthMetrics } from './auth-metrics.js';
import { API_KEY_STRATEGY, SESSION_STRATEGY } from './auth.constants.js';
import { CredentialGuard } from './credential.guard.js';
import { PassportRegistry, type StrategyAttempt } from './passport-registry.js';
import type { Principal } from './principal.js';
import { testPrincipal } from '../../test/support/principal.js';
import type { SessionOrgResolver } from './session-org.resolver.js';

const KEY = `svc_live_${'a'.repeat(43)}`;
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';

/**
 * A strategy that answers every attempt with `answer` (at once, or a turn later) and counts its
 * attempts (in an object: passport runs each attempt on `Object.create(strategy)`).
 */
class FakeStrategy extends Strategy {
  private readonly count = { attempts: 0 };
  get attempts(): number {
    return this.count.attempts;
  }
  constructor(private readonly answer: Principal | null, private readonly later = false) {
    super();
  }
  override authenticate(): void {
    const attempt = this as unknown as StrategyAttempt;
    this.count.attempts++;
    const report = () => (this.answer ? attempt.success(this.answer) : attempt.fail());
    if (this.later) setImmediate(report);
    else report();
  }
}

const principal = (kind: Principal['kind']): Principal => testPrincipal({ kind, scopes: [] });


function guardWith(apiKey: FakeStrategy, session: FakeStrategy) {
  const registry = new PassportRegistry();
  registry.register(API_KEY_STRATEGY, apiKey);
  registry.register(SESSION_STRATEGY, session);
  const reflector = { getAllAndOverride: vi.fn().mockReturnValue('session') };
  return new CredentialGuard(
    reflector as unknown as Reflector,
    { active: false } as unknown as AuthFailureThrottle,
    { resolve: vi.fn() } as unknown as SessionOrgResolver,
    {} as AuthMetrics,
    registry,
  );
}

class RouteController {}
function routeHandler() {}
const contextFor = (authorization?: string) =>
  new ExecutionContextHost([{ headers: authorization ? { authorization } : {} }, { header: vi.fn() }], RouteController, routeHandler);

describe('CredentialGuard', () => {
  it("offers a token only to the strategy its shape names, and both strategies a request with none", async () => {
    const apiKey = new FakeStrategy(principal('api_key'));
    const session = new FakeStrategy(principal('session'));
    const guard = guardWith(apiKey, session);

    await guard.canActivate(contextFor(`Bearer ${KEY}`));
    expect([apiKey.attempts, session.attempts]).toEqual([1, 0]);
    await guard.canActivate(contextFor(`Bearer ${JWT}`));
    expect([apiKey.attempts, session.attempts]).toEqual([1, 1]);

    const refusing = guardWith(new FakeStrategy(null), new FakeStrategy(null));
    await expect(Promise.resolve().then(() => refusing.canActivate(contextFor()))).rejects.toBeInstanceOf(UnauthorizedException);
  });

  it('answers in the same turn when the strategy does, and with a promise when it answers later', async () => {
    const now = contextFor(`Bearer ${KEY}`);
    expect(guardWith(new FakeStrategy(principal('api_key')), new FakeStrategy(null)).canActivate(now)).toBe(true);
    expect(now.switchToHttp().getRequest<{ user?: Principal }>().user?.kind).toBe('api_key');

    const later = guardWith(new FakeStrategy(principal('api_key'), true), new FakeStrategy(null)).canActivate(contextFor(`Bearer ${KEY}`));
    expect(later).toBeInstanceOf(Promise);
    expect(await later).toBe(true);
  });

  it('authenticates a request once, however many times the guard is listed on its route', async () => {
    const apiKey = new FakeStrategy(principal('api_key'));
    const guard = guardWith(apiKey, new FakeStrategy(null));
    const ctx = contextFor(`Bearer ${KEY}`);
    await guard.canActivate(ctx);
    await guard.canActivate(ctx);
    expect(apiKey.attempts).toBe(1);
  });
});
