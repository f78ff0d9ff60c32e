import {
  applyDecorators,
  BadRequestException,
  Injectable,
  UseInterceptors,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { map, type Observable } from 'rxjs';
import type { ResolvedVersion } from './api-versions.js';
import { SERVED_VERSION, VersionEdge, type EdgeRequest, type OperationPlan } from './version-edge.js';

/** The operationId a handler declared versioned, read by OperationVersioning and the start-up check. */
export const VersionedOperation = Reflector.createDecorator<string>();

/**
 * Marks a handler as an operation version changes may touch (its OpenAPI operationId, as in
 * version-changes.ts) and binds it OperationVersioning. Put it above the handler's other
 * decorators: its interceptor then runs last, nearest the validation pipes. The start-up check
 * (VersioningModule) refuses a change that names an operation no handler declares.
 */
export const Versioned = (operationId: string) =>
  applyDecorators(VersionedOperation(operationId), UseInterceptors(OperationVersioning));

/**
 * The interceptor of the operations a version change touches: after the guards (the principal,
 * so the org's pin, is known) and before the pipes (so DTOs validate the newest shape only), it
 * decides the version, leaves it on the request, brings an older request forward, and turns the
 * handler's answer back into the served version's shape. Errors are never converted. A declared
 * operation no change touches (today) runs none of it.
 */
@Injectable()
export class OperationVersioning implements NestInterceptor {
  private readonly plans = new Map<string, OperationPlan | null>();

  constructor(
    private readonly edge: VersionEdge,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> | Promise<Observable<unknown>> {
    const plan = this.planOf(this.reflector.get(VersionedOperation, context.getHandler()));
    if (!plan) return next.handle();
    const request = context.switchToHttp().getRequest<EdgeRequest>();
    // The standalone server refuses a bad header before any route; a host has no such hook.
    const refusal = this.edge.refusal(request);
    if (refusal !== null) throw new BadRequestException(refusal);
    const now = this.edge.now();
    const served = this.edge.served(request, now, plan);
    if (!(served instanceof Promise)) return this.handle(plan, served, request, next);
    return served.catch(() => this.edge.unreadable(now)).then((resolved) => this.handle(plan, resolved, request, next));
  }

  /** The operation's plan, worked out once; null when no change touches it. */
  private planOf(operationId: string | undefined): OperationPlan | null {
    if (!operationId) return null;
    let plan = this.plans.get(operationId);
    if (plan === undefined) {
      const found = this.edge.planOf(operationId);
      plan = found && found.changes.size > 0 ? found : null;
      this.plans.set(operationId, plan);
    }
    return plan;
  }

  private handle(
    plan: OperationPlan,
    resolved: ResolvedVersion,
    request: EdgeRequest,
    next: CallHandler,
  ): Observable<unknown> {
    request[SERVED_VERSION] = resolved;
    this.edge.upgrade(plan, resolved, request);
    if (!plan.changes.has(resolved.version)) return next.handle();
    return next.handle().pipe(map((body) => this.edge.downgrade(plan, resolved, body)));
  }
}
