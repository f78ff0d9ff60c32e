import {
  HttpException,
  HttpStatus,
  Injectable,
  ServiceUnavailableException,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthFailureThrottle, OPEN, type Admission } from './auth-failure-throttle.js';
import { AuthMetrics } from './auth-metrics.js';
import { API_KEY_STRATEGY, SESSION_STRATEGY } from './auth.constants.js';
import { AuthModeMeta } from './auth.metadata.js';
import { looksLikeApiKey } from './api-key-format.js';
import { bearerToken, isDatabaseUnavailable, setResponseHeader } from './http-utils.js';
import { PassportRegistry } from './passport-registry.js';
import type { Principal } from './principal.js';
import { SessionOrgResolver } from './session-org.resolver.js';
import { ERRORS } from '../common/error-messages.js';

interface AuthRequest {
  headers: Record<string, unknown>;
  ip?: string;
  user?: Principal;
  [AUTHENTICATED]?: true;
}

/**
 * The strategies a request's bearer token can satisfy, by its shape: an API key (`svc_live_…`)
 * only the API-key strategy, anything else only the session strategy (each refuses the other's
 * shape). Passport tries both in turn when there is no token, so the 401 is the same as ever;
 * for a token, one attempt instead of a failed one first (the session path's cost, measured).
 */
const BOTH = [API_KEY_STRATEGY, SESSION_STRATEGY];
function strategiesFor(token: string | null): string | string[] {
  if (token === null) return BOTH;
  return looksLikeApiKey(token) ? API_KEY_STRATEGY : SESSION_STRATEGY;
}

/**
 * Marks a request this guard has already authenticated. A controller-level `@Authenticated()`
 * and a route-level `@RequireScopes()` both list this guard, and Nest runs it once per listing:
 * the second run reuses the first one's principal instead of verifying the credential again.
 * A symbol-keyed property rather than a WeakSet: adding every request to a weak collection
 * costs a hash and ephemeron work in every GC (measured on the cached `GET /me`).
 */
const AUTHENTICATED = Symbol('kui.authenticated');

/** `@nestjs/common` exports the HTTP host only through ExecutionContext's signature. */
type HttpArgumentsHost = ReturnType<ExecutionContext['switchToHttp']>;

type AuthMode = ReturnType<Reflector['getAllAndOverride']>;

/**
 * Authenticates with the strategy the bearer token's shape names (API key or session JWT), throttles failed
 * attempts per client address, and for routes that act in an org resolves a session's org.
 * Missing or invalid credential: 401 with `WWW-Authenticate: Bearer` (RFC 6750).
 */
@Injectable()
export class CredentialGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly throttle: AuthFailureThrottle,
    private readonly sessionOrgs: SessionOrgResolver,
    private readonly metrics: AuthMetrics,
    private readonly registry: PassportRegistry,
  ) {}

  /** The route's `AuthModeMeta` (handler over class), read once per route instead of per request. */
  private readonly modes = new WeakMap<object, Map<object, AuthMode>>();

  /**
   * Synchronous when the credential is answered from the verification cache (a value, not a
   * promise): Nest awaits either, and a cached request then costs no promise hops here.
   */
  canActivate(ctx: ExecutionContext): boolean | Promise<boolean> {
    const http = ctx.switchToHttp();
    const request = http.getRequest<AuthRequest>();
    if (request[AUTHENTICATED]) return true;
    // With the throttle off there is nothing to count (nor a client address to work out, nor an await).
    if (!this.throttle.active) return this.authenticateAdmitted(ctx, http, request, OPEN);
    return this.admitThenAuthenticate(ctx, http, request);
  }

  private async admitThenAuthenticate(ctx: ExecutionContext, http: HttpArgumentsHost, request: AuthRequest): Promise<boolean> {
    // The attempt is counted inside admit(), synchronously, before this first await.
    const admission = await this.throttle.admit(request.ip ?? 'unknown', bearerToken(request.headers));
    if (admission.retryAfter > 0) {
      setResponseHeader(http.getResponse(), 'Retry-After', String(admission.retryAfter));
      throw new HttpException(
        { statusCode: 429, error: 'Too Many Requests', message: ERRORS.tooManyFailedAuth },
        HttpStatus.TOO_MANY_REQUESTS,
      );
    }
    return this.authenticateAdmitted(ctx, http, request, admission);
  }

  private authenticateAdmitted(ctx: ExecutionContext, http: HttpArgumentsHost, request: AuthRequest, admission: Admission): boolean | Promise<boolean> {
    let outcome: Principal | Promise<Principal>;
    try {
      outcome = this.authenticate(request, http.getResponse());
    } catch (error) {
      throw this.refused(error, admission, request, http);
    }
    if (!(outcome instanceof Promise)) return this.accepted(ctx, request, outcome, admission);
    return outcome.then(
      (principal) => this.accepted(ctx, request, principal, admission),
      (error: unknown) => {
        throw this.refused(error, admission, request, http);
      },
    );
  }

  private accepted(ctx: ExecutionContext, request: AuthRequest, principal: Principal, admission: Admission): boolean | Promise<boolean> {
    request.user = principal;
    admission.succeeded();
    if (principal.kind === 'session' && this.modeOf(ctx) !== 'session') {
      let pending: void | Promise<void>;
      try {
        pending = this.sessionOrgs.resolve(principal);
      } catch (error) {
        throw this.mapError(error);
      }
      if (pending) {
        return pending.then(
          () => (request[AUTHENTICATED] = true),
          (error: unknown) => {
            throw this.mapError(error);
          },
        );
      }
    }
    request[AUTHENTICATED] = true;
    return true;
  }

  /** Books a failed attempt (an invalid credential) or releases it (anything else); returns the error to throw. */
  private refused(error: unknown, admission: Admission, request: AuthRequest, http: HttpArgumentsHost): unknown {
    if (!(error instanceof UnauthorizedException)) {
      admission.released();
      return error;
    }
    admission.failed();
    const given = bearerToken(request.headers) !== null;
    setResponseHeader(
      http.getResponse(),
      'WWW-Authenticate',
      given ? 'Bearer error="invalid_token", error_description="The credential is invalid, expired or revoked"' : 'Bearer',
    );
    return error;
  }

  private modeOf(ctx: ExecutionContext): AuthMode {
    const handler = ctx.getHandler();
    const cls = ctx.getClass();
    let byHandler = this.modes.get(cls);
    if (!byHandler) this.modes.set(cls, (byHandler = new Map()));
    if (byHandler.has(handler)) return byHandler.get(handler);
    const mode = this.reflector.getAllAndOverride(AuthModeMeta, [handler, cls]);
    byHandler.set(handler, mode);
    return mode;
  }

  /**
   * Passport runs the strategy the token's shape names (`strategiesFor`); with no token it tries
   * the API-key strategy, then the session strategy. A strategy that does not recognise the token
   * fails (never throws), so a next one gets its turn.
   */
  private authenticate(request: AuthRequest, response: unknown): Principal | Promise<Principal> {
    // Passport calls back in the same turn when the strategy answers at once (a cached credential).
    let answered = false;
    let principal: Principal | undefined;
    let failure: unknown;
    let settle: ((error: unknown, user: Principal | false) => void) | null = null;
    let settleNext: ((error: unknown) => void) | null = null;
    const middleware = this.registry.passport.authenticate(
      strategiesFor(bearerToken(request.headers)),
      { session: false },
      (error: unknown, user: Principal | false) => {
        if (settle) return settle(error, user);
        answered = true;
        try {
          principal = this.handleRequest(error, user, request);
        } catch (e) {
          failure = e;
        }
      },
    );
    let nextError: unknown;
    let nextCalled = false;
    middleware(request, response, (error?: unknown) => {
      // Only with no callback answer: passport's `next` (an error, or nothing to say).
      if (settleNext) return settleNext(error);
      nextCalled = true;
      nextError = error;
    });
    if (answered) {
      if (failure !== undefined) throw failure;
      return principal!;
    }
    if (nextCalled) throw nextError ? this.mapError(nextError) : new UnauthorizedException();
    return new Promise<Principal>((resolve, reject) => {
      settle = (error, user) => {
        try {
          resolve(this.handleRequest(error, user, request));
        } catch (e) {
          reject(e);
        }
      };
      settleNext = (error) => reject(error ? this.mapError(error) : new UnauthorizedException());
    });
  }

  private handleRequest(error: unknown, user: Principal | false, request: AuthRequest): Principal {
    if (error) throw this.mapError(error);
    if (!user) {
      const given = bearerToken(request.headers) !== null;
      throw new UnauthorizedException(
        given ? ERRORS.credentialInvalid : ERRORS.authRequiredBearer,
      );
    }
    return user;
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
