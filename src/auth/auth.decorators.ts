import { applyDecorators, createParamDecorator, UseGuards, type ExecutionContext } from '@nestjs/common';
import type { Scope } from '../common/roles.js';
import { CredentialGuard } from './credential.guard.js';
import { ScopesGuard, SessionOnlyGuard } from './access.guards.js';
import { AuthModeMeta, RequiredScopesMeta } from './auth.metadata.js';
import type { Principal } from './principal.js';


/** Any valid credential, session or API key; no scope needed. */
export const Authenticated = () => applyDecorators(AuthModeMeta('any'), UseGuards(CredentialGuard));

/** A browser session only: an API key gets 403, so a leaked key cannot manage keys. */
export const SessionOnly = () => applyDecorators(AuthModeMeta('session'), UseGuards(CredentialGuard, SessionOnlyGuard));

/** Any valid credential that holds every listed scope (403 otherwise). */
export const RequireScopes = (...scopes: Scope[]) =>
  applyDecorators(AuthModeMeta('any'), RequiredScopesMeta(scopes), UseGuards(CredentialGuard, ScopesGuard));

/** The authenticated principal of the request. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  return ctx.switchToHttp().getRequest<{ user: Principal }>().user;
});
