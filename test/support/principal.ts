import type { Principal } from '../../src/auth/principal.js';

/** A verified principal for unit tests: an API key of a member of a free org, unless `overrides` say otherwise. */
export function testPrincipal(overrides: Partial<Principal> = {}): Principal {
  return {
    kind: 'api_key',
    userId: '5b4f0f5e-0c57-4a8a-9b44-8f0a3c1d2e3f',
    email: 'ada@example.com',
    orgId: '0f8e6a34-51c3-4d8e-a1f2-9c0b7d6e5a41',
    orgRole: 'member',
    orgMemberCount: 1,
    plan: 'free',
    scopes: ['decisions:read'],
    ...overrides,
  };
}

/** A signed-in session with no org selected (no X-Org-Id): how session-only routes see their caller. */
export function testSession(overrides: Partial<Principal> = {}): Principal {
  return testPrincipal({
    kind: 'session',
    orgId: null,
    orgRole: null,
    orgMemberCount: 0,
    plan: null,
    scopes: [],
    ...overrides,
  });
}
