import {
  HttpException,
  HttpStatus,
  Injectable,
  Logger,
  NotFoundException,
  ServiceUnavailableException,
  UnauthorizedException,
  UseInterceptors,
  applyDecorators,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { catchError, from, mergeMap, throwError, type Observable } from 'rxjs';
import { isDatabaseUnavailable, setResponseHeader } from '../auth/http-utils.js';
import type { Principal } from '../auth/principal.js';
import { Settings } from '../settings/settings.js';
import { UnknownOrgError, UsageLimitExceededError, type Meter } from '../common/meters.js';
import { UsageService, type ChargeResult } from './usage.service.js';

export const ChargesMeta = Reflector.createDecorator<{ meter: Meter; count: number }>();

/**
 * Charges the principal's org before the handler runs. An interceptor, not a guard, so it
 * always runs after every guard (authentication and scopes) whatever order decorators are in.
 * If the handler (or a pipe) then fails, the charge is given back: only served requests count.
 */
@Injectable()
export class ChargeInterceptor implements NestInterceptor {
  private readonly logger = new Logger('ChargeInterceptor');
  /** Requests already charged: `@Charges` on both a class and a route must charge once, not twice. */
  private readonly charged = new WeakSet<object>();

  constructor(
    private readonly reflector: Reflector,
    private readonly usage: UsageService,
    private readonly settings: Settings,
  ) {}

  async intercept(ctx: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const http = ctx.switchToHttp();
    const request = http.getRequest<{ user?: Principal }>();
    if (this.charged.has(request)) return next.handle();
    // The route's own @Charges overrides the controller's.
    const spec = this.reflector.getAllAndOverride(ChargesMeta, [ctx.getHandler(), ctx.getClass()]);
    const principal = request.user;
    if (!principal) throw new UnauthorizedException('Authentication required');
    if (!principal.orgId) throw new HttpException('No organisation selected: send the X-Org-Id header', HttpStatus.BAD_REQUEST);
    let charge: ChargeResult;
    try {
      charge = await this.usage.charge(principal.orgId, spec.meter, spec.count, principal);
    } catch (error) {
      if (error instanceof UsageLimitExceededError) {
        const now = this.settings.clock.now().getTime();
        setResponseHeader(http.getResponse(), 'Retry-After', String(Math.max(1, Math.ceil((error.resetsAt.getTime() - now) / 1000))));
        throw new HttpException({ statusCode: 429, error: 'Too Many Requests', message: error.message }, HttpStatus.TOO_MANY_REQUESTS);
      }
      if (error instanceof UnknownOrgError) throw new NotFoundException('Organisation not found');
      // A host may have no filter that knows driver errors: say 503 here, not a bare 500.
      if (isDatabaseUnavailable(error)) throw new ServiceUnavailableException('The database is unavailable; retry shortly');
      throw error;
    }
    this.charged.add(request);
    return next.handle().pipe(
      catchError((error: unknown) =>
        from(this.refund(charge)).pipe(mergeMap(() => throwError(() => error))),
      ),
    );
  }

  private async refund(charge: ChargeResult): Promise<void> {
    try {
      // Kept and retried when the database is down at this moment (see PendingRefunds).
      await this.usage.refundEventually(charge);
    } catch (error) {
      // The request's own error is what the caller must see; a lost refund only over-counts.
      this.logger.warn(`could not give back a ${charge.meter} charge of org ${charge.orgId}: ${(error as Error).message}`);
    }
  }
}

/**
 * Put on a host route (or controller) next to an auth decorator:
 * `@RequireScopes('decisions:write') @Charges('captures')`. Charges the principal's org before
 * the handler runs and gives the charge back if the handler fails.
 * Exhausted meter: 429 with `Retry-After` (seconds until the next UTC midnight).
 */
export const Charges = (meter: Meter, count = 1) =>
  applyDecorators(ChargesMeta({ meter, count }), UseInterceptors(ChargeInterceptor));
