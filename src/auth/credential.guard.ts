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
import { AuthFailureThrottle, OPEN } from './auth-failure-throttle.js';
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
 * Requests this guard has already authenticated. A controller-level `@Authenticated()` and a
 * route-level `@RequireScopes()` both list this guard, and Nest runs it once per listing: the
 * second run reuses the first one's principal instead of verifying the credential again.
 */
const authenticated = new WeakSet<object>();

type AuthMode = ReturnType<Reflector['getAllAndOverride']>;

/**
 * Authenticates with either strategy (API key first, then session JWT), throttles failed
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

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const http = ctx.switchToHttp();
    const request = http.getRequest<AuthRequest>();
    if (authenticated.has(request)) return true;
    // The attempt is counted inside admit(), synchronously, before this first await. With the
    // throttle off there is nothing to count (nor a client address to work out, nor an await).
    const admission = this.throttle.active ? await this.throttle.admit(request.ip ?? 'unknown', bearerToken(request.headers)) : OPEN;
    if (admission.retryAfter > 0) {
      setResponseHeader(http.getResponse(), 'Retry-After', String(admission.retryAfter));
      throw new HttpException(
        { statusCode: 429, error: 'Too Many Requests', message: ERRORS.tooManyFailedAuth },
        HttpStatus.TOO_MANY_REQUESTS,
      );
    }
    try {
      request.user = await this.authenticate(request, http.getResponse());
      admission.succeeded();
    } catch (error) {
      if (!(error instanceof UnauthorizedException)) admission.released();
      if (error instanceof UnauthorizedException) {
        admission.failed();
        const given = bearerToken(request.headers) !== null;
        setResponseHeader(
          http.getResponse(),
          'WWW-Authenticate',
          given ? 'Bearer error="invalid_token", error_description="The credential is invalid, expired or revoked"' : 'Bearer',
        );
      }
      throw error;
    }
    const principal = request.user as Principal;
    if (principal.kind === 'session' && this.modeOf(ctx) !== 'session') {
      try {
        await this.sessionOrgs.resolve(principal);
      } catch (error) {
        throw this.mapError(error);
      }
    }
    authenticated.add(request);
    return true;
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
  private authenticate(request: AuthRequest, response: unknown): Promise<Principal> {
    return new Promise((resolve, reject) => {
      const middleware = this.registry.passport.authenticate(
        strategiesFor(bearerToken(request.headers)),
        { session: false },
        (error: unknown, user: Principal | false) => {
          try {
            resolve(this.handleRequest(error, user, request));
          } catch (e) {
            reject(e);
          }
        },
      );
      middleware(request, response, (error?: unknown) => (error ? reject(this.mapError(error)) : reject(new UnauthorizedException())));
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
