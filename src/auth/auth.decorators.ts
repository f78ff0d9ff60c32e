import { applyDecorators, createParamDecorator, UseGuards, type ExecutionContext } from '@nestjs/common';
import { ApiBearerAuth } from '@nestjs/swagger';
import { API_KEY_SCHEME, SESSION_SCHEME } from '../common/openapi.js';
import type { Scope } from '../common/roles.js';
import { CredentialGuard } from './credential.guard.js';
import { LastUseGuard } from './last-use.guard.js';
import { ScopesGuard, SessionOnlyGuard } from './access.guards.js';
import { AuthModeMeta, RequiredScopesMeta } from './auth.metadata.js';
import type { Principal } from './principal.js';
import { RequestBudgetGuard } from './request-budget.js';

/*
 * Each decorator declares a route's auth once: the metadata (what the auth snapshot test and a
 * host's global guard read), the guards that enforce it, and the OpenAPI security requirement
 * (schemes `session` and `apiKey`; a host declares them with `addKeysUsageIdentitySecurity`).
 * Put one of them on a route, or on its controller; a controller-level one and a route-level one
 * together verify the credential once (see CredentialGuard).
 */

/**
 * Any valid credential, session or API key; no scope needed. A key's limits apply (the key's budgets: RequestBudgetGuard),
 * then an admitted key's use is recorded (LastUseGuard, last).
 */
export const Authenticated = () =>
  applyDecorators(
    AuthModeMeta('any'),
    UseGuards(CredentialGuard, RequestBudgetGuard, LastUseGuard),
    ApiBearerAuth(SESSION_SCHEME),
    ApiBearerAuth(API_KEY_SCHEME),
  );

/** A browser session only: an API key gets 403, so a leaked key cannot manage keys. */
export const SessionOnly = () =>
  applyDecorators(AuthModeMeta('session'), UseGuards(CredentialGuard, SessionOnlyGuard), ApiBearerAuth(SESSION_SCHEME));

/** Any valid credential that holds every listed scope (403 otherwise); then a key's limits and its use, as above. */
export const RequireScopes = (...scopes: Scope[]) =>
  applyDecorators(
    AuthModeMeta('any'),
    RequiredScopesMeta(scopes),
    UseGuards(CredentialGuard, ScopesGuard, RequestBudgetGuard, LastUseGuard),
    ApiBearerAuth(SESSION_SCHEME),
    ApiBearerAuth(API_KEY_SCHEME),
  );

/** The authenticated principal of the request. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  return ctx.switchToHttp().getRequest<{ user: Principal }>().user;
});
