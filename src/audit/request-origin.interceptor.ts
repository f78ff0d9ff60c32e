import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { requestOriginOf, runWithRequestOrigin } from '../common/request-context.js';

/**
 * Runs the handler inside the request's origin (client address, user agent, request id), so
 * AuditService.record can stamp events without every service passing the request down.
 * Put it on controllers whose routes change something (`@UseInterceptors(RequestOriginInterceptor)`).
 * Nest binds the deferred handler to the async context in which `handle()` is called.
 */
@Injectable()
export class RequestOriginInterceptor implements NestInterceptor {
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (ctx.getType() !== 'http') return next.handle();
    const origin = requestOriginOf(ctx.switchToHttp().getRequest());
    return runWithRequestOrigin(origin, () => next.handle());
  }
}
