import { TooManyRequests } from '../common/too-many-requests.js';
import {
  HttpException,
  Injectable,
  ServiceUnavailableException,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthFailureThrottle, OPEN, type Admission } from './auth-failure-throttle.js';
import { AuthMetrics } from './auth-metrics.js';
import { AuthModeMeta } from './auth.metadata.js';
import { looksLikeApiKey } from './api-key-format.js';
import { ApiKeyStrategy } from './api-key.strategy.js';
import { bearerToken, isDatabaseUnavailable, setResponseHeader } from './http-utils.js';
import type { Principal } from './principal.js';
import { SessionOrgResolver } from './session-org.resolver.js';
import { SessionStrategy } from './session.strategy.js';
import { ERRORS } from '../common/error-messages.js';

interface AuthRequest {
  headers: Record<string, unknown>;
  ip?: string;
  user?: Principal;
  [AUTHENTICATED]?: true;
}

/**
 * Marks a request this guard has already authenticated. A controller-level `@Authenticated()`
 * and a route-level `@RequireScopes()` both list this guard, and Nest runs it once per listing:
 * the second run reuses the first one's principal instead of verifying the credential again.
 * A symbol-keyed property rather than a WeakSet: adding every request to a weak collection
 * costs a hash and ephemeron work in every GC (measured on the cached `GET /me`).
 */
const AUTHENTICATED = Symbol('kui.authenticated');

const INVALID_TOKEN_CHALLENGE =
  'Bearer error="invalid_token", error_description="The credential is invalid, expired or revoked"';

type AuthMode = ReturnType<Reflector['getAllAndOverride']>;

/**
 * Authenticates with the strategy the bearer token's shape names (decisions: a `svc_live_` token
 * is an API key, anything else a session JWT), throttles failed attempts per client address, and
 * for routes that act in an org resolves a session's org. Missing or invalid credential: 401 with
 * `WWW-Authenticate: Bearer` (RFC 6750).
 *
 * It calls the strategy's verification itself (`ApiKeyStrategy.validate`, `SessionStrategy.verify`)
 * rather than through passport: a credential the verification cache answers is then authenticated
 * in the same turn, with no promise hop anywhere (measured on the cached `GET /me`), and one
 * strategy is asked per token instead of one failing before the other.
 */
@Injectable()
export class CredentialGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly throttle: AuthFailureThrottle,
    private readonly sessionOrgs: SessionOrgResolver,
    private readonly metrics: AuthMetrics,
    private readonly apiKeys: ApiKeyStrategy,
    private readonly sessions: SessionStrategy,
  ) {}

  /** The route's `AuthModeMeta` (handler over class), read once per route instead of per request. */
  private readonly modes = new WeakMap<object, Map<object, AuthMode>>();

  /**
   * Synchronous when the credential is answered from the verification cache (a value, not a
   * promise): Nest awaits either, and a cached request then costs no promise hops here.
   */
  canActivate(ctx: ExecutionContext): boolean | Promise<boolean> {
    // The request by index: switchToHttp() builds three closures per call, on every request.
    const request = ctx.getArgByIndex<AuthRequest>(0);
    if (request[AUTHENTICATED]) return true;
    // With the throttle off there is nothing to count (nor a client address to work out, nor an await).
    if (!this.throttle.active) return this.authenticateAdmitted(ctx, request, OPEN);
    return this.admitThenAuthenticate(ctx, request);
  }

  private async admitThenAuthenticate(ctx: ExecutionContext, request: AuthRequest): Promise<boolean> {
    // The attempt is counted inside admit(), synchronously, before this first await.
    const admission = await this.throttle.admit(request.ip ?? 'unknown', bearerToken(request.headers));
    if (admission.retryAfter > 0) {
      throw new TooManyRequests(ctx.getArgByIndex(1), {
        budget: 'auth_failures',
        message: ERRORS.tooManyFailedAuth,
        retryAfter: admission.retryAfter,
      });
    }
    return this.authenticateAdmitted(ctx, request, admission);
  }

  private authenticateAdmitted(
    ctx: ExecutionContext,
    request: AuthRequest,
    admission: Admission,
  ): boolean | Promise<boolean> {
    let outcome: Principal | null | Promise<Principal | null>;
    try {
      outcome = this.verify(request);
    } catch (error) {
      throw this.refused(error, admission, request, ctx);
    }
    if (!(outcome instanceof Promise)) return this.settled(ctx, request, outcome, admission);
    return outcome.then(
      (principal) => this.settled(ctx, request, principal, admission),
      (error: unknown) => {
        throw this.refused(error, admission, request, ctx);
      },
    );
  }

  /** The one strategy the token's shape names; with no token, none (null: 401). */
  private verify(request: AuthRequest): Principal | null | Promise<Principal | null> {
    const token = bearerToken(request.headers);
    if (token === null) return null;
    return looksLikeApiKey(token) ? this.apiKeys.validate(request) : this.sessions.verify(request);
  }

  private settled(
    ctx: ExecutionContext,
    request: AuthRequest,
    principal: Principal | null,
    admission: Admission,
  ): boolean | Promise<boolean> {
    if (principal) return this.accepted(ctx, request, principal, admission);
    const given = bearerToken(request.headers) !== null;
    throw this.refused(
      new UnauthorizedException(given ? ERRORS.credentialInvalid : ERRORS.authRequiredBearer),
      admission,
      request,
      ctx,
    );
  }

  private accepted(
    ctx: ExecutionContext,
    request: AuthRequest,
    principal: Principal,
    admission: Admission,
  ): boolean | Promise<boolean> {
    request.user = principal;
    admission.succeeded();
    if (principal.kind === 'session') {
      // Session-only routes resolve no org, but a service account's session is refused on them too.
      let pending: void | Promise<void>;
      try {
        pending =
          this.modeOf(ctx) === 'session'
            ? this.sessionOrgs.requirePerson(principal)
            : this.sessionOrgs.resolve(principal);
      } catch (error) {
        throw this.resolveFailed(ctx, error);
      }
      if (pending) {
        return pending.then(
          () => (request[AUTHENTICATED] = true),
          (error: unknown) => {
            throw this.resolveFailed(ctx, error);
          },
        );
      }
    }
    request[AUTHENTICATED] = true;
    return true;
  }

  /** Books a failed attempt (an invalid credential) or releases it (anything else); returns the error to throw. */
  private refused(failure: unknown, admission: Admission, request: AuthRequest, ctx: ExecutionContext): unknown {
    const error = this.mapError(failure);
    if (!(error instanceof UnauthorizedException)) {
      admission.released();
      return error;
    }
    admission.failed();
    const given = bearerToken(request.headers) !== null;
    setResponseHeader(ctx.getArgByIndex(1), 'WWW-Authenticate', given ? INVALID_TOKEN_CHALLENGE : 'Bearer');
    return error;
  }

  /** An error of the session's org resolution; a refused session (401) carries its WWW-Authenticate. */
  private resolveFailed(ctx: ExecutionContext, failure: unknown): unknown {
    const error = this.mapError(failure);
    if (error instanceof UnauthorizedException) {
      setResponseHeader(ctx.getArgByIndex(1), 'WWW-Authenticate', INVALID_TOKEN_CHALLENGE);
    }
    return error;
  }

  private modeOf(ctx: ExecutionContext): AuthMode {
    const handler = ctx.getHandler();
    const cls = ctx.getClass();
    let byHandler = this.modes.get(cls);
    if (!byHandler) this.modes.set(cls, (byHandler = new Map<object, AuthMode>()));
    if (byHandler.has(handler)) return byHandler.get(handler);
    const mode = this.reflector.getAllAndOverride(AuthModeMeta, [handler, cls]);
    byHandler.set(handler, mode);
    return mode;
  }

  private mapError(error: unknown): unknown {
    if (error instanceof HttpException) return error;
    if (isDatabaseUnavailable(error)) {
      this.metrics.verification('error');
      return new ServiceUnavailableException(ERRORS.databaseUnavailable);
    }
    return error;
  }
}
