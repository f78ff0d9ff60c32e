import {
  BadRequestException,
  ForbiddenException,
  Injectable,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { RequiredScopesMeta } from './auth.metadata.js';
import type { Principal } from './principal.js';
import { ERRORS } from '../common/error-messages.js';
import { refuseBeforeHandler } from '../common/refusal.js';
import { Clock } from '../common/clock.js';
import { ScopeUsageRecorder } from './scope-usage-recorder.js';
import { VerificationOutcomeRecorder } from './verification-outcome-recorder.js';

const principalOf = (ctx: ExecutionContext) => ctx.switchToHttp().getRequest<{ user?: Principal }>().user;

/** A refusal by a guard: whatever an earlier budget took for the request goes back (common/refusal.ts). */
const refused = <E extends Error>(ctx: ExecutionContext, error: E): E => {
  refuseBeforeHandler(ctx.getArgByIndex(0));
  return error;
};

/** Refuses anything but a browser session (runs after CredentialGuard). */
@Injectable()
export class SessionOnlyGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    if (principalOf(ctx)?.kind !== 'session') {
      throw refused(ctx, new ForbiddenException(ERRORS.sessionRequired));
    }
    return true;
  }
}

/**
 * Refuses a credential that lacks any scope the route declares (runs after CredentialGuard). A
 * key that passes has the route's scopes counted as used (ScopeUsageRecorder, written behind); a
 * key refused has its verification counted as `insufficient_scope`.
 */
@Injectable()
export class ScopesGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly usage: ScopeUsageRecorder,
    private readonly clock: Clock,
    private readonly outcomes: VerificationOutcomeRecorder,
  ) {}

  canActivate(ctx: ExecutionContext): boolean {
    const required = this.reflector.getAllAndOverride(RequiredScopesMeta, [ctx.getHandler(), ctx.getClass()]) ?? [];
    const principal = principalOf(ctx);
    if (!principal) throw refused(ctx, new ForbiddenException(ERRORS.noCredential));
    if (principal.kind === 'session' && !principal.orgId && required.length > 0) {
      throw refused(ctx, new BadRequestException(ERRORS.noOrgSelectedForScopes));
    }
    const missing = required.filter((s) => !principal.scopes.includes(s));
    if (missing.length > 0) {
      if (principal.keyId) this.outcomes.count(principal.keyId, 'insufficient_scope', this.clock.now().getTime());
      throw refused(ctx, new ForbiddenException(ERRORS.missingScope(missing)));
    }
    if (principal.keyId && required.length > 0) this.usage.record(principal.keyId, required, this.clock.now());
    return true;
  }
}
