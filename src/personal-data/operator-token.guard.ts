import { TooManyRequests } from '../common/too-many-requests.js';
import { createHash, timingSafeEqual } from 'node:crypto';
import {
  Inject,
  Injectable,
  NotFoundException,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { AuthFailureThrottle, OPEN } from '../auth/auth-failure-throttle.js';
import { bearerToken, setResponseHeader } from '../auth/http-utils.js';
import { ERRORS } from '../common/error-messages.js';
import { PERSONAL_DATA_OPTIONS, type PersonalDataOptions } from './personal-data.options.js';

export const ADMIN_CHALLENGE = 'Bearer realm="admin"';

/**
 * The operator's routes (`/admin/...`) take one credential: `Authorization: Bearer <ADMIN_API_TOKEN>`,
 * compared in constant time (digests of equal length). Never a session or an API key: either is
 * just a wrong token here (401). Wrong tokens count as failed authentications of the client address
 * (the same throttle as the API's: AUTH_FAILURE_LIMIT, then 429). Without ADMIN_API_TOKEN the routes do not exist (404).
 */
@Injectable()
export class OperatorTokenGuard implements CanActivate {
  private readonly expected: Buffer | null;

  constructor(
    @Inject(PERSONAL_DATA_OPTIONS) options: PersonalDataOptions,
    private readonly throttle: AuthFailureThrottle,
  ) {
    this.expected = options.adminToken ? digest(options.adminToken) : null;
  }

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    if (!this.expected) throw new NotFoundException();
    const http = ctx.switchToHttp();
    const request = http.getRequest<{ ip?: string; headers: Record<string, unknown> }>();
    const given = bearerToken(request.headers);
    const admission = this.throttle.active ? await this.throttle.admit(request.ip ?? 'unknown', given) : OPEN;
    if (admission.retryAfter > 0) {
      throw new TooManyRequests(http.getResponse(), {
        budget: 'auth_failures',
        message: ERRORS.tooManyFailedAuth,
        retryAfter: admission.retryAfter,
      });
    }
    if (given !== null && timingSafeEqual(digest(given), this.expected)) {
      admission.succeeded();
      return true;
    }
    admission.failed();
    setResponseHeader(http.getResponse(), 'WWW-Authenticate', ADMIN_CHALLENGE);
    throw new UnauthorizedException(ERRORS.adminToken);
  }
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
