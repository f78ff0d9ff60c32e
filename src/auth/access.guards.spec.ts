import { BadRequestException, ForbiddenException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { Scope } from '../common/roles.js';
import { ScopesGuard, SessionOnlyGuard } from './access.guards.js';
import { RequiredScopesMeta } from './auth.metadata.js';
import type { Principal } from './principal.js';
import { testPrincipal } from '../../test/support/principal.js';
import { TestClock } from '../../test/support/clock.js';
import type { ApiKeyStore, ScopeUse } from './api-key-store.js';
import { ScopeUsageRecorder } from './scope-usage-recorder.js';
import { CountedOutcomes } from '../../test/support/outcomes.js';

class RouteController {}
function routeHandler() {}

function contextFor(user: Principal | undefined): ExecutionContextHost {
  return new ExecutionContextHost([{ user, headers: {} }, {}], RouteController, routeHandler);
}

const principal = testPrincipal;

describe('ScopesGuard', () => {
  let reflector: Reflector;
  let guard: ScopesGuard;
  let recorded: ScopeUse[];
  let recorder: ScopeUsageRecorder;
  let outcomes: CountedOutcomes;

  const requires = (scopes: Scope[] | undefined) => vi.spyOn(reflector, 'getAllAndOverride').mockReturnValue(scopes);

  beforeEach(() => {
    reflector = new Reflector();
    recorded = [];
    const store = { recordScopeUse: async (uses: ScopeUse[]) => void recorded.push(...uses) };
    recorder = new ScopeUsageRecorder(store as unknown as ApiKeyStore);
    outcomes = new CountedOutcomes();
    guard = new ScopesGuard(reflector, recorder, new TestClock('2026-03-04T05:06:07Z'), outcomes.recorder);
  });

  it("counts the route's scopes as used by a key that passes, and nothing for a session or a refused key", async () => {
    requires(['decisions:read']);
    guard.canActivate(contextFor(principal({ keyId: 'k1', scopes: ['decisions:read', 'decisions:write'] })));
    guard.canActivate(contextFor(principal({ keyId: 'k1', scopes: ['decisions:read'] })));
    guard.canActivate(contextFor(principal({ kind: 'session', keyId: undefined, scopes: ['decisions:read'] })));
    expect(() => guard.canActivate(contextFor(principal({ keyId: 'k2', scopes: [] })))).toThrow(ForbiddenException);
    await recorder.flush();
    expect(recorded).toEqual([
      {
        keyId: 'k1',
        scope: 'decisions:read',
        day: '2026-03-04',
        requests: 2,
        lastUsedAt: new Date('2026-03-04T05:06:07Z'),
      },
    ]);
  });

  it('reads the required scopes from the handler, then the class', () => {
    requires(['decisions:read']);

    guard.canActivate(contextFor(principal()));

    expect(reflector.getAllAndOverride).toHaveBeenCalledWith(RequiredScopesMeta, [routeHandler, RouteController]);
  });

  it('lets a credential through when it holds every required scope', () => {
    requires(['decisions:read', 'decisions:write']);

    expect(guard.canActivate(contextFor(principal({ scopes: ['decisions:read', 'decisions:write'] })))).toBe(true);
  });

  it('lets any credential through a route that declares no scope', () => {
    requires(undefined);

    expect(guard.canActivate(contextFor(principal({ scopes: [] })))).toBe(true);
    expect(guard.canActivate(contextFor(principal({ kind: 'session', orgId: null, scopes: [] })))).toBe(true);
  });

  it('refuses a key that lacks a required scope with 403 naming it', () => {
    requires(['decisions:read']);

    const refuse = () => guard.canActivate(contextFor(principal({ scopes: ['decisions:write'] })));

    expect(refuse).toThrow(ForbiddenException);
    expect(refuse).toThrow(/decisions:read/);
  });

  it('counts a key it refuses as insufficient_scope, and nothing for a key it admits or a session it refuses', async () => {
    requires(['decisions:read']);
    const refuse = (p: Principal) => expect(() => guard.canActivate(contextFor(p))).toThrow(ForbiddenException);
    refuse(principal({ keyId: 'k1', scopes: ['decisions:write'] }));
    refuse(principal({ keyId: 'k1', scopes: [] }));
    refuse(principal({ kind: 'session', keyId: undefined, orgRole: 'viewer', scopes: [] }));
    guard.canActivate(contextFor(principal({ keyId: 'k2', scopes: ['decisions:read'] })));
    expect(await outcomes.counted()).toEqual({ k1: { insufficient_scope: 2 } });
  });

  it('refuses when only some of the required scopes are held', () => {
    requires(['decisions:read', 'decisions:write']);

    expect(() => guard.canActivate(contextFor(principal({ scopes: ['decisions:read'] })))).toThrow(/decisions:write/);
  });

  it('answers 400 naming X-Org-Id to a session whose org is not resolved', () => {
    requires(['decisions:read']);

    const refuse = () =>
      guard.canActivate(contextFor(principal({ kind: 'session', orgId: null, orgRole: null, plan: null, scopes: [] })));

    expect(refuse).toThrow(BadRequestException);
    expect(refuse).toThrow(/X-Org-Id/);
  });

  it('checks a session with an org against its role ceiling like any credential', () => {
    requires(['decisions:write']);

    const viewer = principal({ kind: 'session', orgRole: 'viewer', scopes: ['decisions:read'] });

    expect(() => guard.canActivate(contextFor(viewer))).toThrow(ForbiddenException);
  });

  it('refuses a request that reached it without a principal', () => {
    requires(['decisions:read']);

    expect(() => guard.canActivate(contextFor(undefined))).toThrow(ForbiddenException);
  });
});

describe('SessionOnlyGuard', () => {
  const guard = new SessionOnlyGuard();

  it('lets a browser session through', () => {
    expect(guard.canActivate(contextFor(principal({ kind: 'session' })))).toBe(true);
  });

  it('refuses an API key with 403', () => {
    const refuse = () =>
      guard.canActivate(contextFor(principal({ kind: 'api_key', scopes: ['decisions:read', 'decisions:write'] })));

    expect(refuse).toThrow(ForbiddenException);
    expect(refuse).toThrow(/API keys cannot/);
  });

  it('refuses a request without a principal', () => {
    expect(() => guard.canActivate(contextFor(undefined))).toThrow(ForbiddenException);
  });
});
