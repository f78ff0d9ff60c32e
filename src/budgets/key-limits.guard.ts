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
import { EffectiveWindows, type EffectiveWindow } from './effective-windows.js';
import { Settings } from '../settings/settings.js';
import { isDatabaseUnavailable, setResponseHeader } from '../auth/http-utils.js';
import type { Principal } from '../auth/principal.js';
import { RequestBudget } from '../auth/request-budget.js';
import { VerificationOutcomeRecorder } from '../auth/verification-outcome-recorder.js';
import { refusedBeforeHandler } from '../common/refusal.js';
import type { KeyLimits } from './key-limits.js';
import { CreditLeases } from './credit-leases.js';
import { DEFAULT_RATE_LIMIT, RateLimitedMeta, type RateLimitSpec } from './rate-limited.decorator.js';
import { WindowLeases } from './window-leases.js';

/** Marks a request already admitted, so a route with the guard listed twice (controller and route) spends once. */
const ADMITTED = Symbol('kui.keyLimits');
type LimitedRequest = { user?: Principal; ip?: string; [ADMITTED]?: true };

/** The raw Node response (Fastify's `reply.raw`, or Express's response itself), as far as the give-back needs it. */
interface RawResponse {
  statusCode: number;
  destroyed: boolean;
  on(event: 'close', listener: () => void): unknown;
}

/** One request's way through the limits: what it has taken so far, to give back on a refusal. */
interface Attempt {
  keyId: string;
  windows: readonly EffectiveWindow[];
  credits: KeyLimits['credits'];
  cost: number;
  request: LimitedRequest;
  response: unknown;
  windowsTaken: number;
  /** When the windows were taken from (a window's tokens go back only within the window they came from). */
  at: number;
  creditsTaken: boolean;
}

/** `RateLimit-Policy` items (draft-ietf-httpapi-ratelimit-headers), written once per window. */
const policies = new WeakMap<readonly EffectiveWindow[], string>();
const policyOf = (windows: readonly EffectiveWindow[]): string => {
  let text = policies.get(windows);
  if (text === undefined)
    policies.set(windows, (text = windows.map((w) => `"${w.label}";q=${w.limit};w=${w.window_seconds}`).join(', ')));
  return text;
};

/**
 * Per-key limits on every route behind our auth decorators, listed after the credential and
 * scope guards (a request they refuse spends nothing) and so before every interceptor, the
 * meters' included: the key's networks (403), its rate windows for the route's window name, then
 * its credits (429 with Retry-After), each refusal counted as the key's verification outcome. A guard, not an interceptor: session requests and keys with
 * no limits and no plan default pass with one comparison and no RxJS pipeline, and a limited key
 * passes synchronously while this instance's leases cover it. A request refused later (a pipe,
 * the meters, the route itself) gives back what it took, in this instance's memory only, from one
 * listener on the raw response.
 */
@Injectable()
export class KeyLimitsGuard extends RequestBudget implements CanActivate {
  private readonly specs = new WeakMap<object, WeakMap<object, RateLimitSpec>>();
  private readonly effective = new EffectiveWindows();

  constructor(
    private readonly reflector: Reflector,
    private readonly windows: WindowLeases,
    private readonly credits: CreditLeases,
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
    // Any key, personal or service (a service key's limits are a key's like any other); never a session.
    if (!principal || principal.kind === 'session' || request[ADMITTED]) return true;
    const limits = principal.limits ?? null;
    const own = limits?.windows ?? null;
    // The plan's windows always apply, in addition to the key's own.
    const planned = principal.plan ? this.settings.planRateLimits[principal.plan] : null;
    if (!limits && !planned) return true;
    request[ADMITTED] = true;
    if (limits?.allows && !limits.allows(request.ip ?? '')) {
      this.outcomes.count(principal.keyId!, 'ip_refused', this.settings.clock.now().getTime());
      throw new ForbiddenException(ERRORS.keyAddressRefused);
    }
    const spec = this.specOf(ctx);
    const windows = this.effective.of(own, planned, spec.window);
    const attempt: Attempt = {
      keyId: principal.keyId!,
      windows,
      credits: limits?.credits ?? null,
      cost: spec.cost,
      request,
      response: ctx.getArgByIndex<unknown>(1),
      windowsTaken: 0,
      at: epochMs(this.settings.clock),
      creditsTaken: false,
    };
    return this.take(attempt);
  }

  /**
   * Takes the route's cost from each window, then from the credits: synchronously while this
   * instance's leases cover it (the common case, no promise), asynchronously from the first step
   * that has to lease. A refusal gives back what the earlier steps took.
   */
  private take(a: Attempt): boolean | Promise<boolean> {
    while (a.windowsTaken < a.windows.length) {
      const w = a.windows[a.windowsTaken];
      const wait = this.windows.take(a.keyId, w, a.cost, a.at);
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
      const wait = this.credits.take(a.keyId, a.credits, a.cost, this.settings.clock.now());
      if (typeof wait !== 'number') {
        return wait.then(
          (later) => {
            this.tookCredits(a, later);
            return this.admitted(a);
          },
          (error: unknown) => this.failed(a, error),
        );
      }
      this.tookCredits(a, wait);
    }
    return this.admitted(a);
  }

  private tookWindow(a: Attempt, w: EffectiveWindow, wait: number): void {
    if (wait > 0) {
      this.giveBack(a, false);
      this.outcomes.count(a.keyId, 'rate_limited', this.settings.clock.now().getTime());
      const retry = Math.max(1, Math.ceil(wait / 1000));
      // The refused window's effective window ends when Retry-After does (the draft: never after it).
      this.headers(a, w, retry);
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
      this.giveBack(a, false);
      this.outcomes.count(a.keyId, 'credits_exhausted', this.settings.clock.now().getTime());
      // Without a refill nothing comes back by itself: a day, by which its owner may have added credits.
      throw new TooManyRequests(a.response, {
        budget: 'key_credits',
        message: ERRORS.keyCreditsSpent,
        retryAfter: wait > 0 ? wait / 1000 : 86_400,
      });
    }
    a.creditsTaken = true;
  }

  private admitted(a: Attempt): true {
    if (a.windows.length > 0) this.headers(a);
    if (a.windowsTaken > 0 || a.creditsTaken) this.giveBackIfRefused(a);
    return true;
  }

  /**
   * One listener on the raw response, for the one give-back rule (common/refusal.ts): a request
   * refused before its handler starts (a pipe's 400, a later budget's 429, a scope refusal after a
   * controller-level budget) gives back what it took. Once the handler has started nothing comes
   * back: not on an error status, not when the client hangs up (the work is done either way).
   * Node emits 'close' after 'finish' too, so 'close' alone sees every ending.
   */
  private giveBackIfRefused(a: Attempt): void {
    const response = a.response as { raw?: RawResponse } & Partial<RawResponse>;
    const raw = response.raw ?? (response as RawResponse);
    if (typeof raw.on !== 'function') return;
    const settle = () => {
      if (refusedBeforeHandler(a.request, raw.statusCode)) this.giveBack(a, true);
    };
    if (raw.destroyed) settle();
    // 'close' comes once per response: `on` spares the wrapper `once` allocates on every request.
    else raw.on('close', settle);
  }

  /** A lease that failed (the database): what was taken goes back; fail closed, as 503. */
  private failed(a: Attempt, error: unknown): never {
    this.giveBack(a, false);
    if (isDatabaseUnavailable(error)) throw new ServiceUnavailableException(ERRORS.databaseUnavailable);
    throw error;
  }

  private giveBack(a: Attempt, withCredits: boolean): void {
    for (let i = 0; i < a.windowsTaken; i++) this.windows.giveBack(a.keyId, a.windows[i], a.cost, a.at);
    a.windowsTaken = 0;
    if (withCredits && a.creditsTaken) this.credits.giveBack(a.keyId, a.credits!, a.cost, new Date(a.at));
    a.creditsTaken = false;
  }

  /** RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers-11), on every answer of a limited route. */
  private headers(a: Attempt, refused?: EffectiveWindow, retry?: number): void {
    const windows = a.windows;
    if (windows.length === 0) return;
    setResponseHeader(a.response, 'RateLimit-Policy', policyOf(windows));
    const now = epochMs(this.settings.clock);
    let text = '';
    for (const w of windows) {
      const r = this.windows.remaining(a.keyId, w, now);
      // t: when the whole limit is back (nothing counted so far weighs on the window any more).
      const t = w === refused ? retry! : r >= w.limit ? 0 : Math.ceil(this.windows.resetIn(a.keyId, w, now) / 1000);
      text += `${text ? ', ' : ''}"${w.label}";r=${r};t=${t}`;
    }
    setResponseHeader(a.response, 'RateLimit', text);
  }

  private specOf(ctx: ExecutionContext): RateLimitSpec {
    const cls = ctx.getClass();
    const handler = ctx.getHandler();
    let byHandler = this.specs.get(cls);
    if (!byHandler) this.specs.set(cls, (byHandler = new WeakMap()));
    let spec = byHandler.get(handler);
    if (!spec)
      byHandler.set(
        handler,
        (spec = this.reflector.getAllAndOverride(RateLimitedMeta, [handler, cls]) ?? DEFAULT_RATE_LIMIT),
      );
    return spec;
  }
}
