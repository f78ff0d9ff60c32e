import { Inject, Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { catchError, type Observable } from 'rxjs';
import { TooManyRequests } from '../common/too-many-requests.js';
import { ERRORS } from '../common/error-messages.js';
import { EVENTS_SETTINGS, type EventsSettings } from './events-settings.js';

/** 429 for an org over its test-and-retry budget; RetryAfterInterceptor writes its Retry-After. */
const throttled = (retryAfter: number) =>
  new TooManyRequests(null, { budget: 'webhook_sends', message: ERRORS.tooManyWebhookSends(retryAfter), retryAfter });

/**
 * Test and retry requests per org per minute (WEBHOOK_SEND_RATE_LIMIT; 0 = off), counted in memory
 * per instance by rate-limiter-flexible. Taken after the caller is known to manage the org, so
 * nobody outside it can spend its budget.
 */
@Injectable()
export class WebhookSendThrottle {
  private readonly limiter: RateLimiterMemory | null;

  constructor(@Inject(EVENTS_SETTINGS) settings: EventsSettings) {
    this.limiter =
      settings.sendRatePerMinute > 0
        ? new RateLimiterMemory({ points: settings.sendRatePerMinute, duration: 60 })
        : null;
  }

  async take(orgId: string): Promise<void> {
    if (!this.limiter) return;
    try {
      await this.limiter.consume(orgId);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      throw throttled(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
    }
  }
}

/** Puts a throttled send's wait into `Retry-After` (the service knows it; only the response can carry it). */
@Injectable()
export class RetryAfterInterceptor implements NestInterceptor {
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      catchError((error: unknown) => {
        if (error instanceof TooManyRequests) error.onto(ctx.switchToHttp().getResponse());
        throw error;
      }),
    );
  }
}
