import { TooManyRequests } from '../common/too-many-requests.js';
import {
  HttpException,
  HttpStatus,
  Injectable,
  Logger,
  NotFoundException,
  ServiceUnavailableException,
  UnauthorizedException,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { catchError, from, mergeMap, throwError, type Observable } from 'rxjs';
import { isDatabaseUnavailable } from '../auth/http-utils.js';
import type { Principal } from '../auth/principal.js';
import { VerificationOutcomeRecorder } from '../auth/verification-outcome-recorder.js';
import { UnknownOrgError, UsageLimitExceededError } from '../common/meters.js';
import { epochMs } from '../common/clock.js';
import { ERRORS } from '../common/error-messages.js';
import { refusedBeforeHandler, refuseBeforeHandler } from '../common/refusal.js';
import { Settings } from '../settings/settings.js';
import { UsageService, type ChargeResult } from './usage.service.js';

/** What a route charges: `count` units of `meter` per request. */
export interface ChargeSpec {
  /** A meter of the deployment's registry (checked at start: checkRouteMeters). */
  meter: string;
  count: number;
}

/** The typed metadata `@Charges` sets on a route or a controller (a route's own overrides its controller's). */
export const ChargesMeta = Reflector.createDecorator<ChargeSpec>();

/**
 * Marks a request already charged, so a route with `@Charges` on both its controller and itself
 * (the interceptor then runs twice) charges once. A symbol-keyed property: no per-request set.
 */
const CHARGED = Symbol('kui.charged');

/** The status an error answers with: an HttpException's, else 500. */
const statusOf = (error: unknown): number => (error instanceof HttpException ? error.getStatus() : 500);
type ChargeableRequest = { user?: Principal; [CHARGED]?: true };

/**
 * The one executor of `@Charges`. It runs after every guard (authentication, scopes), so a
 * refused request is never charged, and charges the principal's org through UsageService's
 * atomic charge before the route's pipes and handler (synchronously when this instance's leased
 * block covers it); if a pipe then refuses the input, the charge is given back (to the block, or
 * kept and retried while the database is away, see PendingRefunds) before the error goes on. Exhausted meter: 429 with `Retry-After` (seconds until the meter
 * resets, the next UTC midnight); unknown org: 404; database down: 503. A key's verification
 * outcome on such a route is counted here (`usage_exceeded` or `valid`), not by LastUseGuard.
 */
@Injectable()
export class ChargeInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Charges');
  /** controller → route method → its spec: two metadata reads once per route, not per request. */
  private readonly specs = new WeakMap<object, WeakMap<object, ChargeSpec | undefined>>();

  constructor(
    private readonly reflector: Reflector,
    private readonly usage: UsageService,
    private readonly settings: Settings,
    private readonly outcomes: VerificationOutcomeRecorder,
  ) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> | Promise<Observable<unknown>> {
    const http = ctx.switchToHttp();
    const request = http.getRequest<ChargeableRequest>();
    const spec = this.specOf(ctx.getClass(), ctx.getHandler());
    if (!spec || request[CHARGED]) return next.handle();
    const response: unknown = http.getResponse();
    let charged: ChargeResult | Promise<ChargeResult>;
    try {
      charged = this.charge(request, spec);
    } catch (error) {
      throw this.refused(request, response, error);
    }
    // Leased charging answers a charge its block covers synchronously: no promise on the hot path.
    if (!(charged instanceof Promise)) return this.admitted(request, charged, next);
    return charged.then(
      (charge) => this.admitted(request, charge, next),
      (error: unknown) => {
        throw this.refused(request, response, error);
      },
    );
  }

  private admitted(request: ChargeableRequest, charge: ChargeResult, next: CallHandler): Observable<unknown> {
    request[CHARGED] = true;
    this.outcomes.settle(request, 'valid', this.now());
    // The one give-back rule (common/refusal.ts): only a refusal before the handler (a pipe's 400) gives the charge back.
    return next
      .handle()
      .pipe(
        catchError((error: unknown) =>
          refusedBeforeHandler(request, statusOf(error))
            ? from(this.refund(charge)).pipe(mergeMap(() => throwError(() => error)))
            : throwError(() => error),
        ),
      );
  }

  /**
   * A charge refused before the handler (the meter's 429, an unknown org, the database away): what
   * the key's budgets took goes back, and the key's verification outcome, which LastUseGuard left
   * to the charge, is settled (refused by the meter, else admitted). Returns the error to throw.
   */
  private refused(request: ChargeableRequest, response: unknown, error: unknown): unknown {
    const answer = this.answerOf(response, error);
    refuseBeforeHandler(request);
    this.outcomes.settle(request, answer instanceof TooManyRequests ? 'usage_exceeded' : 'valid', this.now());
    return answer;
  }

  /** Milliseconds since the epoch, without a Date on the system clock (it runs on every charged request). */
  private now(): number {
    return epochMs(this.settings.clock);
  }

  private specOf(controller: object, handler: object): ChargeSpec | undefined {
    let byHandler = this.specs.get(controller);
    if (!byHandler) this.specs.set(controller, (byHandler = new WeakMap()));
    if (byHandler.has(handler)) return byHandler.get(handler);
    const spec = this.reflector.getAllAndOverride(ChargesMeta, [handler as () => unknown, controller as () => unknown]);
    byHandler.set(handler, spec);
    return spec;
  }

  private charge(request: ChargeableRequest, spec: ChargeSpec): ChargeResult | Promise<ChargeResult> {
    const principal = request.user;
    if (!principal) throw new UnauthorizedException(ERRORS.authRequired);
    if (!principal.orgId) throw new HttpException(ERRORS.noOrgSelected, HttpStatus.BAD_REQUEST);
    return this.usage.chargeNow(principal.orgId, spec.meter, spec.count, principal);
  }

  /** What a refused charge answers: the meter's 429 with `Retry-After`, 404 for an unknown org, 503 with the database away. */
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

  private async refund(charge: ChargeResult): Promise<void> {
    try {
      // Kept and retried when the database is down at this moment (see PendingRefunds).
      await this.usage.refundEventually(charge);
    } catch (error) {
      // The request's own error is what the caller must see; a lost refund only over-counts.
      this.logger.warn(
        `could not give back a ${charge.meter} charge of org ${charge.orgId}: ${(error as Error).message}`,
      );
    }
  }
}
