import { TooManyRequests } from '../common/too-many-requests.js';
import {
  ForbiddenException,
  Injectable,
  ServiceUnavailableException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { epochMs } from '../common/clock.js';
import { ERRORS } from '../common/error-messages.js';
import { effectiveWindows, type EffectiveWindow } from './effective-windows.js';
import { Settings } from '../settings/settings.js';
import { isDatabaseUnavailable } from '../auth/http-utils.js';
import type { Principal } from '../auth/principal.js';
import { RequestBudget } from '../auth/request-budget.js';
import { VerificationOutcomeRecorder } from '../auth/verification-outcome-recorder.js';
import { refusedBeforeHandler } from '../common/refusal.js';
import { RouteMemo } from '../common/route-memo.js';
import { ChargesMeta, type ChargeSpec } from './charges.meta.js';
import type { KeyLimits } from './key-limits.js';
import type { RateWindow } from './key-settings.js';
import { CreditLeases } from './credit-leases.js';
import { OrgMeter, type MeterCharge } from './org-meter.js';
import { writeRateLimitHeaders } from './rate-limit-headers.js';
import { DEFAULT_RATE_LIMIT, RateLimitedMeta, type RateLimitSpec } from './rate-limited.decorator.js';
import { WindowLeases } from './window-leases.js';

/** Marks a request already admitted, so a route with the guard listed twice (controller and route) spends once. */
const ADMITTED = Symbol('kui.keyLimits');
const NO_WINDOWS: readonly EffectiveWindow[] = [];
type LimitedRequest = { user?: Principal; ip?: string; [ADMITTED]?: true };

/** The raw Node response (Fastify's `reply.raw`, or Express's response itself), as far as the give-back needs it. */
interface RawResponse {
  statusCode: number;
  destroyed: boolean;
  on(event: 'close', listener: () => void): unknown;
}

/** What a route spends, read once per route: its window and cost (`@RateLimited`) and its charge (`@Charges`). */
interface RouteSpend {
  rate: RateLimitSpec;
  charge: ChargeSpec | undefined;
}

/** One request's way through the budgets: what it has taken so far, to give back on a refusal. */
interface Attempt {
  principal: Principal;
  /** The key's id; null for a session (which spends only the org's meter). */
  keyId: string | null;
  windows: readonly EffectiveWindow[];
  credits: KeyLimits['credits'];
  cost: number;
  charge: ChargeSpec | undefined;
  request: LimitedRequest;
  response: unknown;
  windowsTaken: number;
  /** When the windows were taken from (a window's tokens go back only within the window they came from). */
  at: number;
  creditsTaken: boolean;
  meterTaken: MeterCharge | null;
}

/**
 * The one executor of what a route spends, on every route behind our auth decorators (auth's
 * RequestBudget port), listed after the credential and scope guards (a request they refuse spends
 * nothing) and before LastUseGuard. In order: a key's networks (403), its rate windows for the
 * route's `@RateLimited` window name, its credits, then the org's meter of the route's `@Charges`
 * (through the OrgMeter port); each a 429 with Retry-After, each refusal counted as the key's
 * verification outcome. A session spends only the org's meter. A guard, not an interceptor: no
 * RxJS pipeline, and a request passes synchronously while this instance's leases cover it. A
 * request refused later (a pipe, a later budget, a scope after a controller-level budget) gives
 * back what it took, in this instance's memory, from one listener on the raw response.
 */
@Injectable()
export class SpendGuard extends RequestBudget implements CanActivate {
  /** What each route spends: its window and cost (`@RateLimited`) and its charge (`@Charges`). */
  private readonly routes = new RouteMemo<RouteSpend>((cls, handler) => {
    const targets = [handler, cls];
    return {
      rate: this.reflector.getAllAndOverride(RateLimitedMeta, targets) ?? DEFAULT_RATE_LIMIT,
      charge: this.reflector.getAllAndOverride(ChargesMeta, targets),
    };
  });

  constructor(
    private readonly reflector: Reflector,
    private readonly windows: WindowLeases,
    private readonly credits: CreditLeases,
    private readonly meter: OrgMeter,
    private readonly settings: Settings,
    private readonly outcomes: VerificationOutcomeRecorder,
  ) {
    super();
  }

  canActivate(ctx: ExecutionContext): boolean | Promise<boolean> {
    return this.admit(ctx);
  }

  admit(ctx: ExecutionContext): boolean | Promise<boolean> {
    // The request by index: switchToHttp() builds three closures per call, on every request.
    const request = ctx.getArgByIndex<LimitedRequest>(0);
    const principal = request.user;
    if (!principal || request[ADMITTED]) return true;
    const route = this.routes.of(ctx);
    // Any key, personal or service (a service key's limits are a key's like any other); never a session.
    const key = principal.kind !== 'session';
    const limits = key ? (principal.limits ?? null) : null;
    // The plan's windows always apply, in addition to the key's own.
    const planned = key && principal.plan ? this.settings.planRateLimits[principal.plan] : null;
    if (!limits && !planned && !route.charge) return true;
    request[ADMITTED] = true;
    if (limits?.allows && !limits.allows(request.ip ?? '')) {
      this.outcomes.count(principal.keyId!, 'ip_refused', this.settings.clock.now().getTime());
      throw new ForbiddenException(ERRORS.keyAddressRefused);
    }
    const attempt: Attempt = {
      principal,
      keyId: key ? principal.keyId! : null,
      windows: this.windowsOf(principal.keyId!, key, limits?.windows ?? null, planned, route.rate.window),
      credits: limits?.credits ?? null,
      cost: route.rate.cost,
      charge: route.charge,
      request,
      response: ctx.getArgByIndex<unknown>(1),
      windowsTaken: 0,
      at: epochMs(this.settings.clock),
      creditsTaken: false,
      meterTaken: null,
    };
    return this.take(attempt);
  }

  /**
   * The key's windows and its plan's for the route (none for a session): remembered with the key's
   * leases while its setting, its plan's windows and the route's window name stay the same.
   */
  private windowsOf(
    keyId: string,
    key: boolean,
    own: readonly RateWindow[] | null,
    planned: readonly RateWindow[] | null,
    route: string,
  ): readonly EffectiveWindow[] {
    if (!key || (!own?.length && !planned?.length)) return NO_WINDOWS;
    return this.windows.windowsOf(keyId, own, planned, route, effectiveWindows);
  }

  /**
   * Takes the route's cost from each window, then from the credits, then its charge from the org's
   * meter: synchronously while this instance's leases cover it (the common case, no promise),
   * asynchronously from the first step that has to lease. A refusal gives back what the earlier
   * steps took.
   */
  private take(a: Attempt): boolean | Promise<boolean> {
    while (a.windowsTaken < a.windows.length) {
      const w = a.windows[a.windowsTaken];
      const wait = this.windows.takeAt(a.keyId!, a.windows, a.windowsTaken, a.cost, a.at);
      if (typeof wait !== 'number') {
        return wait.then(
          (later) => {
            this.tookWindow(a, w, later);
            return this.take(a);
          },
          (error: unknown) => this.failed(a, error),
        );
      }
      this.tookWindow(a, w, wait);
    }
    if (a.credits && !a.creditsTaken) {
      const wait = this.credits.take(a.keyId!, a.credits, a.cost, this.settings.clock.now());
      if (typeof wait !== 'number') {
        return wait.then(
          (later) => {
            this.tookCredits(a, later);
            return this.take(a);
          },
          (error: unknown) => this.failed(a, error),
        );
      }
      this.tookCredits(a, wait);
    }
    if (a.charge && a.meterTaken === null) {
      let charged: MeterCharge | Promise<MeterCharge>;
      try {
        charged = this.meter.charge(a.principal, a.charge.meter, a.charge.count, a.response);
      } catch (error) {
        return this.meterRefused(a, error);
      }
      // A Promise only when this instance's block does not cover the charge (or the exact path).
      if (charged instanceof Promise) {
        return charged.then(
          (taken) => {
            a.meterTaken = taken;
            return this.admitted(a);
          },
          (error: unknown) => this.meterRefused(a, error),
        );
      }
      a.meterTaken = charged;
    }
    return this.admitted(a);
  }

  private tookWindow(a: Attempt, w: EffectiveWindow, wait: number): void {
    if (wait > 0) {
      this.giveBack(a);
      this.outcomes.count(a.keyId!, 'rate_limited', this.settings.clock.now().getTime());
      const retry = Math.max(1, Math.ceil(wait / 1000));
      writeRateLimitHeaders(a.response, this.windows, a.keyId!, a.windows, epochMs(this.settings.clock), w, retry);
      throw new TooManyRequests(a.response, {
        budget: w.budget,
        message: ERRORS.keyRateLimited(w.label),
        retryAfter: retry,
      });
    }
    a.windowsTaken++;
  }

  private tookCredits(a: Attempt, wait: number): void {
    if (wait !== 0) {
      this.giveBack(a);
      this.outcomes.count(a.keyId!, 'credits_exhausted', this.settings.clock.now().getTime());
      // Without a refill nothing comes back by itself: a day, by which its owner may have added credits.
      throw new TooManyRequests(a.response, {
        budget: 'key_credits',
        message: ERRORS.keyCreditsSpent,
        retryAfter: wait > 0 ? wait / 1000 : 86_400,
      });
    }
    a.creditsTaken = true;
  }

  /**
   * The org's meter refused (its 429, or no org, an unknown org, the database away): what the key
   * took goes back at once, and a key's outcome is counted here, since LastUseGuard, after this
   * guard, does not run: `usage_exceeded` for the meter's 429, `valid` otherwise (the key was).
   */
  private meterRefused(a: Attempt, error: unknown): never {
    this.giveBack(a);
    if (a.keyId !== null) {
      const outcome = error instanceof TooManyRequests ? 'usage_exceeded' : 'valid';
      this.outcomes.count(a.keyId, outcome, this.settings.clock.now().getTime());
    }
    throw error;
  }

  private admitted(a: Attempt): true {
    if (a.windows.length > 0) writeRateLimitHeaders(a.response, this.windows, a.keyId!, a.windows, a.at);
    if (a.windowsTaken > 0 || a.creditsTaken || a.meterTaken !== null) this.giveBackIfRefused(a);
    return true;
  }

  /**
   * One listener on the raw response, for the one give-back rule (common/refusal.ts): a request
   * refused before its handler starts (a pipe's 400, a later budget's 429, a scope refusal after a
   * controller-level budget) gives back what it took: windows, credits and the meter's charge.
   * Once the handler has started nothing comes back: not on an error status, not when the client
   * hangs up (the work is done either way). Node emits 'close' after 'finish' too, so 'close'
   * alone sees every ending.
   */
  private giveBackIfRefused(a: Attempt): void {
    const response = a.response as { raw?: RawResponse } & Partial<RawResponse>;
    const raw = response.raw ?? (response as RawResponse);
    if (typeof raw.on !== 'function') return;
    const settle = () => {
      if (refusedBeforeHandler(a.request, raw.statusCode)) this.giveBack(a);
    };
    if (raw.destroyed) settle();
    // 'close' comes once per response: `on` spares the wrapper `once` allocates on every request.
    else raw.on('close', settle);
  }

  /** A lease that failed (the database): what was taken goes back; fail closed, as 503. */
  private failed(a: Attempt, error: unknown): never {
    this.giveBack(a);
    if (isDatabaseUnavailable(error)) throw new ServiceUnavailableException(ERRORS.databaseUnavailable);
    throw error;
  }

  /** Gives back everything the attempt has taken so far (each step once). */
  private giveBack(a: Attempt): void {
    for (let i = 0; i < a.windowsTaken; i++) this.windows.giveBack(a.keyId!, a.windows[i], a.cost, a.at);
    a.windowsTaken = 0;
    if (a.creditsTaken) this.credits.giveBack(a.keyId!, a.credits!, a.cost, new Date(a.at));
    a.creditsTaken = false;
    if (a.meterTaken !== null) this.meter.giveBack(a.meterTaken);
    a.meterTaken = null;
  }
}
