import { TooManyRequests } from '../common/too-many-requests.js';
import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Principal } from '../auth/principal.js';
import { Settings } from '../settings/settings.js';
import { ERRORS } from '../common/error-messages.js';

/**
 * Mints per user per minute (MINT_RATE_LIMIT, default 30; 0 = off): 429 with `Retry-After`
 * beyond it. Counted in memory per instance (rate-limiter-flexible's RateLimiterMemory); the
 * active-key cap (409), enforced in the database, is what bounds a user's keys across instances.
 * Placed after authentication: the key is the session's user.
 */
@Injectable()
export class MintRateGuard implements CanActivate {
  private readonly limiter: RateLimiterMemory | null;

  constructor(settings: Settings) {
    this.limiter =
      settings.mintRatePerMinute > 0
        ? new RateLimiterMemory({ points: settings.mintRatePerMinute, duration: 60 })
        : null;
  }

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    if (!this.limiter) return true;
    const http = ctx.switchToHttp();
    const principal = http.getRequest<{ user?: Principal }>().user;
    if (!principal) return true; // the credential guard before this one has already refused
    try {
      await this.limiter.consume(principal.userId);
      return true;
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      throw new TooManyRequests(http.getResponse(), {
        budget: 'mints',
        message: ERRORS.tooManyMints(seconds),
        retryAfter: seconds,
      });
    }
  }
}
