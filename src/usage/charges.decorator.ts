import {
  HttpException,
  HttpStatus,
  Injectable,
  NotFoundException,
  UnauthorizedException,
  UseInterceptors,
  applyDecorators,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Observable } from 'rxjs';
import { setResponseHeader } from '../auth/http-utils.js';
import type { Principal } from '../auth/principal.js';
import { Settings } from '../core/settings.js';
import { UnknownOrgError, UsageLimitExceededError, type Meter } from './meters.js';
import { UsageService } from './usage.service.js';

export const ChargesMeta = Reflector.createDecorator<{ meter: Meter; count: number }>();

/**
 * Charges the principal's org before the handler runs. An interceptor, not a guard, so it
 * always runs after every guard (authentication and scopes) whatever order decorators are in.
 */
@Injectable()
export class ChargeInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly usage: UsageService,
    private readonly settings: Settings,
  ) {}

  async intercept(ctx: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const spec = this.reflector.get(ChargesMeta, ctx.getHandler());
    const http = ctx.switchToHttp();
    const principal = http.getRequest<{ user?: Principal }>().user;
    if (!principal) throw new UnauthorizedException('Authentication required');
    if (!principal.orgId) throw new HttpException('No organisation selected: send the X-Org-Id header', HttpStatus.BAD_REQUEST);
    try {
      await this.usage.charge(principal.orgId, spec.meter, spec.count);
    } catch (error) {
      if (error instanceof UsageLimitExceededError) {
        const now = this.settings.clock.now().getTime();
        setResponseHeader(http.getResponse(), 'Retry-After', String(Math.max(1, Math.ceil((error.resetsAt.getTime() - now) / 1000))));
        throw new HttpException({ statusCode: 429, error: 'Too Many Requests', message: error.message }, HttpStatus.TOO_MANY_REQUESTS);
      }
      if (error instanceof UnknownOrgError) throw new NotFoundException('Organisation not found');
      throw error;
    }
    return next.handle();
  }
}

/**
 * Put on a host route next to an auth decorator: `@RequireScopes('decisions:write') @Charges('captures')`.
 * Exhausted meter: 429 with `Retry-After` (seconds until the next UTC midnight).
 */
export const Charges = (meter: Meter, count = 1) =>
  applyDecorators(ChargesMeta({ meter, count }), UseInterceptors(ChargeInterceptor));
