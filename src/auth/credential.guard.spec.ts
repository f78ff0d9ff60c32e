import { ServiceUnavailableException, UnauthorizedException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { describe, expect, it, vi } from 'vitest';
import { testPrincipal } from '../../test/support/principal.js';
import { Settings } from '../settings/settings.js';
import { ApiKeyVerifier } from './api-key-verifier.js';
import { ApiKeyStrategy } from './api-key.strategy.js';
import { AuthFailureThrottle } from './auth-failure-throttle.js';
import { AuthMetrics } from './auth-metrics.js';
import { SessionOnly } from './auth.decorators.js';
import { CredentialGuard } from './credential.guard.js';
import type { Principal } from './principal.js';
import { SessionOrgResolver } from './session-org.resolver.js';
import { SessionStrategy } from './session.strategy.js';

const KEY = `svc_live_${'a'.repeat(43)}`;
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';

type Answer = Principal | null | Promise<Principal | null>;

const principal = (kind: Principal['kind']): Principal => testPrincipal({ kind, scopes: [] });
const later = (p: Principal | null): Promise<Principal | null> => new Promise((ok) => setImmediate(() => ok(p)));

/** The guard over the real strategies, their verification answering `apiKey` and `session`. */
function guardWith(apiKey: () => Answer, session: () => Answer) {
  const settings = new Settings({ session: { secret: 's'.repeat(32) }, authFailureLimit: 0 });
  // The strategies' own verifiers are not reached: their verification methods answer for them.
  const apiKeys = new ApiKeyStrategy(Object.create(ApiKeyVerifier.prototype) as ApiKeyVerifier);
  const sessions = new SessionStrategy(settings);
  const keyCalls = vi.spyOn(apiKeys, 'validate').mockImplementation(apiKey);
  const sessionCalls = vi.spyOn(sessions, 'verify').mockImplementation(session);
  const guard = new CredentialGuard(
    new Reflector(),
    new AuthFailureThrottle(settings),
    // Session-only routes only check that the session is a person's (no service account): yes here.
    Object.assign(Object.create(SessionOrgResolver.prototype) as SessionOrgResolver, {
      requirePerson: () => undefined,
    }),
    new AuthMetrics(),
    apiKeys,
    sessions,
  );
  return { guard, keyCalls, sessionCalls };
}

class RouteController {
  // A session-only route: the guard resolves no org for it.
  @SessionOnly()
  handler() {}
}
const contextFor = (authorization?: string) => {
  const response = { header: vi.fn() };
  const ctx = new ExecutionContextHost(
    [{ headers: authorization ? { authorization } : {} }, response],
    RouteController,
    RouteController.prototype.handler,
  );
  return { ctx, response };
};

describe('CredentialGuard', () => {
  it('asks only the strategy the token shape names, and neither for a request with no token', async () => {
    const { guard, keyCalls, sessionCalls } = guardWith(
      () => principal('api_key'),
      () => principal('session'),
    );
    await guard.canActivate(contextFor(`Bearer ${KEY}`).ctx);
    expect([keyCalls.mock.calls.length, sessionCalls.mock.calls.length]).toEqual([1, 0]);
    await guard.canActivate(contextFor(`Bearer ${JWT}`).ctx);
    expect([keyCalls.mock.calls.length, sessionCalls.mock.calls.length]).toEqual([1, 1]);

    const none = contextFor();
    expect(() => guard.canActivate(none.ctx)).toThrow(UnauthorizedException);
    expect(none.response.header).toHaveBeenCalledWith('WWW-Authenticate', 'Bearer');
    expect([keyCalls.mock.calls.length, sessionCalls.mock.calls.length]).toEqual([1, 1]);
  });

  it('answers in the same turn when the strategy does, and with a promise when it answers later', async () => {
    const now = contextFor(`Bearer ${KEY}`).ctx;
    expect(
      guardWith(
        () => principal('api_key'),
        () => null,
      ).guard.canActivate(now),
    ).toBe(true);
    expect(now.switchToHttp().getRequest<{ user?: Principal }>().user?.kind).toBe('api_key');

    const pending = guardWith(
      () => later(principal('api_key')),
      () => null,
    ).guard.canActivate(contextFor(`Bearer ${KEY}`).ctx);
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toBe(true);
  });

  it('answers 401 with an invalid_token challenge when the strategy refuses the credential, at once or later', async () => {
    const { guard } = guardWith(
      () => null,
      () => later(null),
    );
    for (const token of [KEY, JWT]) {
      const { ctx, response } = contextFor(`Bearer ${token}`);
      await expect(Promise.resolve().then(() => guard.canActivate(ctx))).rejects.toBeInstanceOf(UnauthorizedException);
      expect(response.header).toHaveBeenCalledWith(
        'WWW-Authenticate',
        expect.stringContaining('error="invalid_token"'),
      );
    }
  });

  it('answers 503, not 500, when the database cannot verify the credential', async () => {
    const down = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const { guard } = guardWith(
      () => Promise.reject(down),
      () => null,
    );
    await expect(guard.canActivate(contextFor(`Bearer ${KEY}`).ctx)).rejects.toBeInstanceOf(
      ServiceUnavailableException,
    );
  });

  it('authenticates a request once, however many times the guard is listed on its route', async () => {
    const { guard, keyCalls } = guardWith(
      () => principal('api_key'),
      () => null,
    );
    const { ctx } = contextFor(`Bearer ${KEY}`);
    await guard.canActivate(ctx);
    await guard.canActivate(ctx);
    expect(keyCalls).toHaveBeenCalledTimes(1);
  });
});
