import { Inject, Injectable } from '@nestjs/common';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { throttledUnit } from '../auth/auth-failure-throttle.js';

export const REPORT_LIMIT = Symbol('REPORT_LIMIT');
const WINDOW_SECONDS = 60;

/**
 * POST /credentials/revoke per client address (IPv6 by /64), CREDENTIALS_REVOKE_LIMIT reports in
 * a one-minute window from an address's first report; per instance (rate-limiter-flexible's
 * RateLimiterMemory, whose entries expire with their window). 0 turns it off.
 */
@Injectable()
export class ReportThrottle {
  private readonly limiter: RateLimiterMemory | null;

  constructor(@Inject(REPORT_LIMIT) limit: number) {
    this.limiter =
      limit > 0
        ? new RateLimiterMemory({ keyPrefix: 'credentials_revoke', points: limit, duration: WINDOW_SECONDS })
        : null;
  }

  /** Counts a report; resolves to the seconds to wait when over the limit, else 0. */
  async take(address: string): Promise<number> {
    if (!this.limiter) return 0;
    try {
      await this.limiter.consume(throttledUnit(address));
      return 0;
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      return Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
    }
  }
}
