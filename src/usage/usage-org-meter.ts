import {
  HttpException,
  HttpStatus,
  Injectable,
  Logger,
  NotFoundException,
  ServiceUnavailableException,
} from '@nestjs/common';
import { isDatabaseUnavailable } from '../auth/http-utils.js';
import type { Principal } from '../auth/principal.js';
import { OrgMeter } from '../budgets/org-meter.js';
import { ERRORS } from '../common/error-messages.js';
import { UnknownOrgError, UsageLimitExceededError } from '../common/meters.js';
import { TooManyRequests } from '../common/too-many-requests.js';
import { Settings } from '../settings/settings.js';
import { UsageService, type ChargeResult } from './usage.service.js';

/**
 * Budgets' OrgMeter port, as usage keeps the meters: what SpendGuard charges for a route's
 * `@Charges`, after the key's own budgets. The principal's org, through UsageService's atomic
 * charge: synchronously when this instance's leased block covers it (no promise on the hot path),
 * else a promise (a block to lease, or the exact path). A refusal becomes the answer: exhausted
 * meter, 429 with `Retry-After` (seconds until the meter resets, the next UTC midnight) naming
 * `usage:<meter>`; unknown org, 404; no org selected, 400; database away, 503. A charge given back
 * goes to the instance's block (leased) or is kept and retried until it lands (PendingRefunds).
 */
@Injectable()
export class UsageOrgMeter extends OrgMeter {
  private readonly logger = new Logger('Charges');

  constructor(
    private readonly usage: UsageService,
    private readonly settings: Settings,
  ) {
    super();
  }

  charge(principal: Principal, meter: string, count: number, response: unknown): ChargeResult | Promise<ChargeResult> {
    if (!principal.orgId) throw new HttpException(ERRORS.noOrgSelected, HttpStatus.BAD_REQUEST);
    let charged: ChargeResult | Promise<ChargeResult>;
    try {
      charged = this.usage.chargeNow(principal.orgId, meter, count, principal);
    } catch (error) {
      throw this.answerOf(response, error);
    }
    if (!(charged instanceof Promise)) return charged;
    return charged.catch((error: unknown) => {
      throw this.answerOf(response, error);
    });
  }

  giveBack(charge: ChargeResult): void {
    // Kept and retried when the database is down at this moment (see PendingRefunds).
    this.usage.refundEventually(charge).catch((error: unknown) => {
      // A lost refund only over-counts; the request has been answered already.
      this.logger.warn(
        `could not give back a ${charge.meter} charge of org ${charge.orgId}: ${(error as Error).message}`,
      );
    });
  }

  /** What a refused charge answers (see the class). */
  private answerOf(response: unknown, error: unknown): unknown {
    if (error instanceof UsageLimitExceededError) {
      const now = this.settings.clock.now().getTime();
      return new TooManyRequests(response, {
        budget: `usage:${error.meter}`,
        message: error.message,
        retryAfter: (error.resetsAt.getTime() - now) / 1000,
      });
    }
    if (error instanceof UnknownOrgError) return new NotFoundException(ERRORS.orgNotFound);
    // A host may have no filter that knows driver errors: say 503 here, not a bare 500.
    if (isDatabaseUnavailable(error)) return new ServiceUnavailableException(ERRORS.databaseUnavailable);
    return error;
  }
}
