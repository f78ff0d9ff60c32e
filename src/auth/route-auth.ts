import type { ExecutionContext, Type } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Scope } from '../common/roles.js';
import { AuthModeMeta, RequiredScopesMeta, type AuthMode } from './auth.metadata.js';

/** What a route declares with `@Authenticated()`, `@SessionOnly()` or `@RequireScopes()`. */
export interface RouteAuth {
  /** `session`: a browser session only; `any`: a session or an API key. */
  credentials: AuthMode;
  /** Scopes the credential must hold, all of them. */
  scopes: Scope[];
}

const reflector = new Reflector();

/** A route handler as Nest hands it out (`ExecutionContext.getHandler()`): any function. */
type RouteHandler = ReturnType<ExecutionContext['getHandler']>;

/**
 * The auth a route declares through this module's decorators (the route's own declaration
 * overrides its controller's), or null when it declares none.
 */
export function routeAuth(handler: RouteHandler, controller: Type<unknown>): RouteAuth | null {
  const credentials = reflector.getAllAndOverride(AuthModeMeta, [handler, controller]);
  if (!credentials) return null;
  return { credentials, scopes: reflector.getAllAndOverride(RequiredScopesMeta, [handler, controller]) ?? [] };
}

/**
 * For a host's default-deny global guard: true when the route is guarded by this module (its own
 * routes, and the host's routes that carry `@Authenticated()`, `@SessionOnly()` or
 * `@RequireScopes()`), so the host guard can let it through and leave the credential to ours:
 *
 *   canActivate(ctx) { return isPublic(ctx) || isKeysUsageIdentityRoute(ctx) || this.checkHostAuth(ctx); }
 */
export function isKeysUsageIdentityRoute(context: ExecutionContext): boolean {
  return routeAuth(context.getHandler(), context.getClass()) !== null;
}
