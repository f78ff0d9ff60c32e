import {
  HttpException,
  HttpStatus,
  Injectable,
  Logger,
  NotFoundException,
  ServiceUnavailableException,
  UnauthorizedException,
  createParamDecorator,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
  type PipeTransform,
} from '@nestjs/common';
import { PATH_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';
import { Reflector } from '@nestjs/core';
import { catchError, from, isObservable, mergeMap, throwError, type Observable } from 'rxjs';
import { isDatabaseUnavailable, setResponseHeader } from '../auth/http-utils.js';
import type { Principal } from '../auth/principal.js';
import { Settings } from '../settings/settings.js';
import { UnknownOrgError, UsageLimitExceededError, type Meter } from '../common/meters.js';
import { UsageService, type ChargeResult } from './usage.service.js';
import { ERRORS } from '../common/error-messages.js';

export const ChargesMeta = Reflector.createDecorator<{ meter: Meter; count: number }>();
type ChargeSpec = { meter: Meter; count: number };

/**
 * Marks a request already charged: whatever combination of `@Charges` and `ChargeInterceptor` a
 * route has, it charges once. A symbol-keyed property, not a WeakSet (a hash and ephemeron work
 * per request; see CredentialGuard).
 */
const CHARGED = Symbol('kui.charged');
type ChargeableRequest = { user?: Principal; [CHARGED]?: true };

/**
 * Charges a request's org and gives a charge back; what `@Charges` and `ChargeInterceptor` share.
 * Also the pipe of the hidden route parameter through which `@Charges` reaches it (a pipe is
 * resolved in the host's module like any enhancer, so it gets `UsageService` from there).
 */
@Injectable()
export class ChargeGate implements PipeTransform<ChargeScope, ChargeScope> {
  private readonly logger = new Logger('Charges');

  constructor(
    private readonly usage: UsageService,
    private readonly settings: Settings,
  ) {}

  transform(scope: ChargeScope): ChargeScope {
    scope.gate = this;
    return scope;
  }

  /**
   * Charges the principal's org, or returns null when this request was already charged.
   * Exhausted meter: 429 with `Retry-After`; unknown org: 404; database down: 503.
   */
  async charge(request: ChargeableRequest, response: unknown, spec: ChargeSpec): Promise<ChargeResult | null> {
    if (request[CHARGED]) return null;
    const principal = request.user;
    if (!principal) throw new UnauthorizedException(ERRORS.authRequired);
    if (!principal.orgId) throw new HttpException(ERRORS.noOrgSelected, HttpStatus.BAD_REQUEST);
    let charge: ChargeResult;
    try {
      charge = await this.usage.charge(principal.orgId, spec.meter, spec.count, principal);
    } catch (error) {
      if (error instanceof UsageLimitExceededError) {
        const now = this.settings.clock.now().getTime();
        setResponseHeader(response, 'Retry-After', String(Math.max(1, Math.ceil((error.resetsAt.getTime() - now) / 1000))));
        throw new HttpException({ statusCode: 429, error: 'Too Many Requests', message: error.message }, HttpStatus.TOO_MANY_REQUESTS);
      }
      if (error instanceof UnknownOrgError) throw new NotFoundException(ERRORS.orgNotFound);
      // A host may have no filter that knows driver errors: say 503 here, not a bare 500.
      if (isDatabaseUnavailable(error)) throw new ServiceUnavailableException(ERRORS.databaseUnavailable);
      throw error;
    }
    request[CHARGED] = true;
    return charge;
  }

  async refund(charge: ChargeResult): Promise<void> {
    try {
      // Kept and retried when the database is down at this moment (see PendingRefunds).
      await this.usage.refundEventually(charge);
    } catch (error) {
      // The request's own error is what the caller must see; a lost refund only over-counts.
      this.logger.warn(`could not give back a ${charge.meter} charge of org ${charge.orgId}: ${(error as Error).message}`);
    }
  }

  /** `source`'s error after the charge was given back. */
  refundOnError<T>(source: Observable<T>, charge: ChargeResult): Observable<T> {
    return source.pipe(catchError((error: unknown) => from(this.refund(charge)).pipe(mergeMap(() => throwError(() => error)))));
  }
}

/** What the hidden parameter of a charged route carries into its wrapped handler. */
interface ChargeScope {
  request: { user?: Principal };
  response: unknown;
  gate?: ChargeGate;
}

const ChargeScopeParam = createParamDecorator((_: unknown, ctx: ExecutionContext): ChargeScope => {
  const http = ctx.switchToHttp();
  return { request: http.getRequest(), response: http.getResponse() };
});

const reflector = new Reflector();
const WRAPPED = Symbol('kui.charges.wrapped');
type Handler = ((...args: unknown[]) => unknown) & { [WRAPPED]?: true };
const isThenable = (v: unknown): v is PromiseLike<unknown> => typeof (v as PromiseLike<unknown> | null)?.then === 'function';

/**
 * Wraps a route method so that it charges after every guard and pipe, right before its body,
 * and gives the charge back if the body fails. Nest passes the charging context through a
 * hidden last parameter (removed before the body sees its arguments). Done by wrapping rather
 * than with an interceptor: with any interceptor on a route, Nest runs its whole rxjs and
 * async-context pipeline per request, which cost a charged request about as much CPU as the
 * rest of the charge (see docs/performance.md, "Charging through a host route").
 */
function wrapRoute(proto: object, key: string | symbol, descriptor: PropertyDescriptor): void {
  const original = descriptor.value as Handler;
  if (typeof original !== 'function' || original[WRAPPED]) return;
  const controller = proto.constructor;
  const params = (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, key) ?? {}) as Record<string, { index: number }>;
  // After the route's own parameters (TypeScript applies parameter decorators before method ones).
  const at = Object.values(params).reduce((max, p) => Math.max(max, p.index + 1), 0);
  ChargeScopeParam(ChargeGate)(proto, key, at);
  const specs = new WeakMap<object, ChargeSpec>();
  const wrapped: Handler = async function (this: object, ...args: unknown[]) {
    const scope = args[at] as ChargeScope | undefined;
    if (!scope?.gate) {
      throw new Error(`@Charges on ${String(key)}: its charging parameter is missing; apply @Charges after the route's parameter decorators`);
    }
    args.length = at;
    let spec = specs.get(this.constructor);
    if (!spec) {
      spec = reflector.getAllAndOverride(ChargesMeta, [wrapped, this.constructor]);
      specs.set(this.constructor, spec);
    }
    const gate = scope.gate;
    const charge = await gate.charge(scope.request, scope.response, spec);
    if (!charge) return original.apply(this, args);
    let result: unknown;
    try {
      result = original.apply(this, args);
      if (isThenable(result)) result = await result;
    } catch (error) {
      await gate.refund(charge);
      throw error;
    }
    return isObservable(result) ? gate.refundOnError(result, charge) : result;
  };
  for (const metaKey of Reflect.getOwnMetadataKeys(original)) {
    Reflect.defineMetadata(metaKey, Reflect.getOwnMetadata(metaKey, original), wrapped);
  }
  Object.defineProperty(wrapped, 'name', { value: original.name });
  wrapped[WRAPPED] = true;
  descriptor.value = wrapped;
}

/** Every route method of a controller, its inherited ones included (wrapped onto its own prototype). */
function wrapRoutesOf(controller: Function): void {
  const proto = controller.prototype as object;
  const seen = new Set<string | symbol>();
  for (let p: object | null = proto; p && p !== Object.prototype; p = Object.getPrototypeOf(p) as object | null) {
    for (const key of Reflect.ownKeys(p)) {
      if (key === 'constructor' || seen.has(key)) continue;
      seen.add(key);
      const descriptor = Object.getOwnPropertyDescriptor(p, key);
      if (typeof descriptor?.value !== 'function' || Reflect.getMetadata(PATH_METADATA, descriptor.value) === undefined) continue;
      wrapRoute(proto, key, descriptor);
      Object.defineProperty(proto, key, descriptor);
    }
  }
}

/**
 * Put on a host route (or controller) next to an auth decorator:
 * `@RequireScopes('decisions:write') @Charges('captures')`. Charges the principal's org after
 * every guard (authentication, scopes) and pipe, right before the handler runs, and gives the
 * charge back if the handler fails. Exhausted meter: 429 with `Retry-After` (seconds until the
 * next UTC midnight). On a controller it charges every route; a route's own `@Charges` overrides it.
 */
export const Charges =
  (meter: Meter, count = 1): ClassDecorator & MethodDecorator =>
  (target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => {
    const meta = ChargesMeta({ meter, count });
    if (key !== undefined && descriptor) {
      wrapRoute(target, key, descriptor);
      meta(target, key, descriptor);
    } else {
      meta(target as Function);
      wrapRoutesOf(target as Function);
    }
  };

/**
 * The same charge as an interceptor, for a host that lists it itself
 * (`@UseInterceptors(ChargeInterceptor)` with `ChargesMeta`). `@Charges` does not use it: a route
 * with any interceptor costs Nest's interceptor pipeline per request. A request is charged once
 * whichever of the two it meets.
 */
@Injectable()
export class ChargeInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly gate: ChargeGate,
  ) {}

  async intercept(ctx: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const http = ctx.switchToHttp();
    // The route's own @Charges overrides the controller's.
    const spec = this.reflector.getAllAndOverride(ChargesMeta, [ctx.getHandler(), ctx.getClass()]);
    const charge = await this.gate.charge(http.getRequest<{ user?: Principal }>(), http.getResponse(), spec);
    if (!charge) return next.handle();
    return this.gate.refundOnError(next.handle(), charge);
  }
}
