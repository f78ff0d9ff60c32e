import { createHash, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, NotFoundException, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { bearerToken, setResponseHeader } from '../auth/http-utils.js';
import { ERRORS } from '../common/error-messages.js';
import { PERSONAL_DATA_OPTIONS, type PersonalDataOptions } from './personal-data.options.js';

export const ADMIN_CHALLENGE = 'Bearer realm="admin"';

/**
 * The operator's routes (`/admin/...`) take one credential: `Authorization: Bearer <ADMIN_API_TOKEN>`,
 * compared in constant time (digests of equal length). Never a session or an API key: either is
 * just a wrong token here (401). Without ADMIN_API_TOKEN the routes do not exist (404).
 */
@Injectable()
export class OperatorTokenGuard implements CanActivate {
  private readonly expected: Buffer | null;

  constructor(@Inject(PERSONAL_DATA_OPTIONS) options: PersonalDataOptions) {
    this.expected = options.adminToken ? digest(options.adminToken) : null;
  }

  canActivate(ctx: ExecutionContext): boolean {
    if (!this.expected) throw new NotFoundException();
    const http = ctx.switchToHttp();
    const given = bearerToken(http.getRequest<{ headers: Record<string, unknown> }>().headers);
    if (given !== null && timingSafeEqual(digest(given), this.expected)) return true;
    setResponseHeader(http.getResponse(), 'WWW-Authenticate', ADMIN_CHALLENGE);
    throw new UnauthorizedException(ERRORS.adminToken);
  }
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
