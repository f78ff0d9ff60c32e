import {
  BadRequestException,
  Injectable,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { INTERCEPTORS_METADATA } from '@nestjs/common/constants.js';
import { MetadataScanner, ModulesContainer } from '@nestjs/core';
import { map, type Observable } from 'rxjs';
import type { ResolvedVersion } from './api-versions.js';
import { SERVED_VERSION, VersionEdge, type EdgeRequest, type OperationPlan } from './version-edge.js';

/** @nestjs/swagger's metadata key of `@ApiOperation()` (its DECORATORS constant is not exported). */
const API_OPERATION = 'swagger/apiOperation';

/**
 * The interceptor of one operation a version change touches: after the guards (the principal,
 * so the org's pin, is known) and before the pipes (so DTOs validate the newest shape only), it
 * decides the version, leaves it on the request, brings an older request forward, and turns the
 * handler's answer back into the served version's shape. Errors are never converted.
 */
export class OperationVersioning implements NestInterceptor {
  constructor(
    private readonly edge: VersionEdge,
    readonly plan: OperationPlan,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> | Promise<Observable<unknown>> {
    const request = context.switchToHttp().getRequest<EdgeRequest>();
    // The standalone server refuses a bad header before any route; a host has no such hook.
    const refusal = this.edge.refusal(request);
    if (refusal !== null) throw new BadRequestException(refusal);
    const now = this.edge.now();
    const served = this.edge.served(request, now, this.plan);
    if (!(served instanceof Promise)) return this.handle(served, request, next);
    return served.catch(() => this.edge.unreadable(now)).then((resolved) => this.handle(resolved, request, next));
  }

  private handle(resolved: ResolvedVersion, request: EdgeRequest, next: CallHandler): Observable<unknown> {
    request[SERVED_VERSION] = resolved;
    this.edge.upgrade(this.plan, resolved, request);
    if (!this.plan.changes.has(resolved.version)) return next.handle();
    return next.handle().pipe(map((body) => this.edge.downgrade(this.plan, resolved, body)));
  }
}

/**
 * Binds an OperationVersioning to exactly the route handlers whose operationId a version change
 * names, in whichever module their controller is (the library's, a host's, the server's): no
 * global interceptor, so the other routes run no step of it. Call once per application, after its
 * controllers are built and before its routes are registered (VersioningModule.configure).
 *
 * Nest reads a handler's interceptors when it registers the route, from the handler it finds on
 * the controller instance; the binding gives that instance an own handler (the prototype's,
 * called through, carrying the same metadata plus the interceptor), so the controller class is
 * untouched and two applications in one process never share an interceptor.
 */
@Injectable()
export class VersionedOperations {
  private readonly scanner = new MetadataScanner();

  constructor(
    private readonly edge: VersionEdge,
    private readonly modules: ModulesContainer,
  ) {}

  /** Binds the interceptors; returns the operationIds bound. */
  bind(): string[] {
    const bound: string[] = [];
    for (const module of this.modules.values()) {
      for (const wrapper of module.controllers.values()) {
        // A request-scoped controller has no instance yet (one is built per request): not supported.
        const instance = wrapper.isDependencyTreeStatic() ? (wrapper.instance as Record<string, unknown> | null) : null;
        if (!instance) continue;
        const prototype = Object.getPrototypeOf(instance) as Record<string, unknown>;
        for (const name of this.scanner.getAllMethodNames(prototype)) {
          const handler = prototype[name] as (...args: unknown[]) => unknown;
          const id = (Reflect.getMetadata(API_OPERATION, handler) as { operationId?: string } | undefined)?.operationId;
          const plan = id ? this.edge.planOf(id) : null;
          if (!plan || plan.changes.size === 0 || instance[name] !== handler) continue;
          instance[name] = withInterceptor(handler, new OperationVersioning(this.edge, plan));
          bound.push(plan.operationId);
        }
      }
    }
    return bound;
  }
}

/** A handler that calls `handler`, carries all its metadata, and runs `interceptor` last (nearest the pipes). */
function withInterceptor(
  handler: (...args: unknown[]) => unknown,
  interceptor: NestInterceptor,
): (...args: unknown[]) => unknown {
  const versioned = function (this: unknown, ...args: unknown[]): unknown {
    return handler.apply(this, args);
  };
  Object.defineProperty(versioned, 'name', { value: handler.name });
  for (const key of Reflect.getOwnMetadataKeys(handler))
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, handler), versioned);
  const interceptors = (Reflect.getOwnMetadata(INTERCEPTORS_METADATA, handler) as unknown[] | undefined) ?? [];
  Reflect.defineMetadata(INTERCEPTORS_METADATA, [...interceptors, interceptor], versioned);
  return versioned;
}
