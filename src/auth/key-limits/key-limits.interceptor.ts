import {
  ForbiddenException,
  HttpException,
  HttpStatus,
  Injectable,
  ServiceUnavailableException,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { catchError, throwError, type Observable } from 'rxjs';
import { ERRORS } from '../../common/error-messages.js';
import type { RateWindow } from '../../common/plan-rate-limits.js';
import { Settings } from '../../settings/settings.js';
import { isDatabaseUnavailable, setResponseHeader } from '../http-utils.js';
import type { Principal } from '../principal.js';
import { CreditLeases } from './credit-leases.js';
import { DEFAULT_RATE_LIMIT, RateLimitedMeta, type RateLimitSpec } from './rate-limited.decorator.js';
import { WindowLeases } from './window-leases.js';

/** Marks a request already admitted, so a route with the interceptor listed twice spends once. */
const ADMITTED = Symbol('kui.keyLimits');
type LimitedRequest = { user?: Principal; ip?: string; [ADMITTED]?: true };

/** `RateLimit-Policy` items (draft-ietf-httpapi-ratelimit-headers), written once per window. */
const policies = new WeakMap<readonly RateWindow[], string>();
const policyOf = (windows: readonly RateWindow[]): string => {
  let text = policies.get(windows);
  if (text === undefined) policies.set(windows, (text = windows.map((w) => `"${w.name}";q=${w.limit};w=${w.window_seconds}`).join(', ')));
  return text;
};

/**
 * Per-key limits on every route behind our auth decorators, after every guard (a request the
 * guards refuse spends nothing): the key's networks (403), its rate windows for the route's
 * window name, then its credits (429 with Retry-After); a request refused later (the meters,
 * the route itself) gives back what it took, in this instance's memory only. Session requests,
 * and keys with no limits and no plan default, pass with one comparison.
 */
@Injectable()
export class KeyLimitsInterceptor implements NestInterceptor {
  private readonly specs = new WeakMap<object, WeakMap<object, RateLimitSpec>>();

  constructor(
    private readonly reflector: Reflector,
    private readonly windows: WindowLeases,
    private readonly credits: CreditLeases,
    private readonly settings: Settings,
  ) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> | Promise<Observable<unknown>> {
    const http = ctx.switchToHttp();
    const request = http.getRequest<LimitedRequest>();
    const principal = request.user;
    if (!principal || principal.kind !== 'api_key' || request[ADMITTED]) return next.handle();
    const limits = principal.limits ?? null;
    const own = limits?.windows ?? null;
    const planned = own ? null : principal.plan ? this.settings.planRateLimits[principal.plan] : null;
    if (!limits && !planned) return next.handle();
    request[ADMITTED] = true;
    if (limits?.allows && !limits.allows(request.ip ?? '')) throw new ForbiddenException(ERRORS.keyAddressRefused);
    const spec = this.specOf(ctx);
    const windows = this.windowsNamed(own ?? planned, spec.window);
    return this.admit(principal.keyId!, windows, limits?.credits ?? null, spec.cost, http.getResponse(), next);
  }

  private async admit(
    keyId: string,
    windows: readonly RateWindow[],
    credits: NonNullable<Principal['limits']>['credits'],
    cost: number,
    response: unknown,
    next: CallHandler,
  ): Promise<Observable<unknown>> {
    const taken: RateWindow[] = [];
    const giveBack = (withCredits: boolean) => {
      for (const w of taken) this.windows.giveBack(keyId, w, cost);
      if (withCredits) this.credits.giveBack(keyId, cost);
    };
    try {
      for (const w of windows) {
        const wait = await this.windows.take(keyId, w, cost, Date.now());
        if (wait > 0) {
          giveBack(false);
          this.headers(keyId, windows, response);
          setResponseHeader(response, 'Retry-After', String(Math.max(1, Math.ceil(wait / 1000))));
          throw new HttpException({ statusCode: 429, error: 'Too Many Requests', message: ERRORS.keyRateLimited(w.name) }, HttpStatus.TOO_MANY_REQUESTS);
        }
        taken.push(w);
      }
      if (credits) {
        const wait = await this.credits.take(keyId, credits, cost, this.settings.clock.now());
        if (wait !== 0) {
          giveBack(false);
          // Without a refill nothing comes back by itself: a day, by which its owner may have added credits.
          setResponseHeader(response, 'Retry-After', String(wait > 0 ? Math.max(1, Math.ceil(wait / 1000)) : 86_400));
          throw new HttpException({ statusCode: 429, error: 'Too Many Requests', message: ERRORS.keyCreditsSpent }, HttpStatus.TOO_MANY_REQUESTS);
        }
      }
    } catch (error) {
      if (error instanceof HttpException) throw error;
      giveBack(false);
      // Fail closed: without the shared state no instance can tell what the key has left.
      if (isDatabaseUnavailable(error)) throw new ServiceUnavailableException(ERRORS.databaseUnavailable);
      throw error;
    }
    if (windows.length > 0) this.headers(keyId, windows, response);
    return next.handle().pipe(
      catchError((error: unknown) => {
        giveBack(credits !== null);
        return throwError(() => error);
      }),
    );
  }

  /** RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers-10), on every answer of a limited route. */
  private headers(keyId: string, windows: readonly RateWindow[], response: unknown): void {
    if (windows.length === 0) return;
    setResponseHeader(response, 'RateLimit-Policy', policyOf(windows));
    setResponseHeader(
      response,
      'RateLimit',
      windows
        .map((w) => {
          const r = Math.min(w.limit, this.windows.remaining(keyId, w));
          return `"${w.name}";r=${r};t=${Math.ceil(((w.limit - r) / w.limit) * w.window_seconds)}`;
        })
        .join(', '),
    );
  }

  private windowsNamed(all: readonly RateWindow[] | null, name: string): readonly RateWindow[] {
    if (!all) return [];
    if (all.length === 1) return all[0]!.name === name ? all : [];
    return all.filter((w) => w.name === name);
  }

  private specOf(ctx: ExecutionContext): RateLimitSpec {
    const cls = ctx.getClass();
    const handler = ctx.getHandler();
    let byHandler = this.specs.get(cls);
    if (!byHandler) this.specs.set(cls, (byHandler = new WeakMap()));
    let spec = byHandler.get(handler);
    if (!spec) byHandler.set(handler, (spec = this.reflector.getAllAndOverride(RateLimitedMeta, [handler, cls]) ?? DEFAULT_RATE_LIMIT));
    return spec;
  }
}
