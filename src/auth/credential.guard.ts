import {
  HttpException,
  HttpStatus,
  Injectable,
  ServiceUnavailableException,
  UnauthorizedException,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import { AuthFailureThrottle } from './auth-failure-throttle.js';
import { AuthMetrics } from './auth-metrics.js';
import { API_KEY_STRATEGY, SESSION_STRATEGY } from './auth.constants.js';
import { AuthModeMeta } from './auth.metadata.js';
import { bearerToken, isDatabaseUnavailable, setResponseHeader } from './http-utils.js';
import type { Principal } from './principal.js';
import { SessionOrgResolver } from './session-org.resolver.js';

interface AuthRequest {
  headers: Record<string, unknown>;
  ip?: string;
  user?: Principal;
}

/**
 * Authenticates with either strategy (API key first, then session JWT), throttles failed
 * attempts per client address, and for routes that act in an org resolves a session's org.
 * Missing or invalid credential: 401 with `WWW-Authenticate: Bearer` (RFC 6750).
 */
@Injectable()
export class CredentialGuard extends AuthGuard([API_KEY_STRATEGY, SESSION_STRATEGY]) {
  constructor(
    private readonly reflector: Reflector,
    private readonly throttle: AuthFailureThrottle,
    private readonly sessionOrgs: SessionOrgResolver,
    private readonly metrics: AuthMetrics,
  ) {
    super();
  }

  override async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const http = ctx.switchToHttp();
    const request = http.getRequest<AuthRequest>();
    const address = request.ip ?? 'unknown';
    const wait = this.throttle.retryAfter(address);
    if (wait > 0) {
      setResponseHeader(http.getResponse(), 'Retry-After', String(wait));
      throw new HttpException(
        { statusCode: 429, error: 'Too Many Requests', message: 'Too many failed authentication attempts from this address; retry later' },
        HttpStatus.TOO_MANY_REQUESTS,
      );
    }
    try {
      await super.canActivate(ctx);
    } catch (error) {
      if (error instanceof UnauthorizedException) {
        this.throttle.recordFailure(address);
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
    const mode = this.reflector.getAllAndOverride(AuthModeMeta, [ctx.getHandler(), ctx.getClass()]);
    if (principal.kind === 'session' && mode !== 'session') {
      try {
        await this.sessionOrgs.resolve(principal);
      } catch (error) {
        throw this.mapError(error);
      }
    }
    return true;
  }

  override handleRequest<T>(error: unknown, user: T, _info: unknown, ctx: ExecutionContext): T {
    if (error) throw this.mapError(error);
    if (!user) {
      const request = ctx.switchToHttp().getRequest<AuthRequest>();
      const given = bearerToken(request.headers) !== null;
      throw new UnauthorizedException(
        given ? 'The credential is invalid, expired or revoked' : 'Authentication required: send Authorization: Bearer <token>',
      );
    }
    return user;
  }

  private mapError(error: unknown): unknown {
    if (error instanceof HttpException) return error;
    if (isDatabaseUnavailable(error)) {
      this.metrics.verification('error');
      return new ServiceUnavailableException('The database is unavailable; retry shortly');
    }
    return error;
  }
}
