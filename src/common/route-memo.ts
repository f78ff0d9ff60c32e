import type { ExecutionContext } from '@nestjs/common';

/**
 * What a guard reads of a route's metadata, computed once per route (controller class and
 * handler) and then found by two WeakMap lookups on every request: reading metadata through the
 * Reflector on every request costs more than the rest of such a guard.
 */
type RouteClass = ReturnType<ExecutionContext['getClass']>;
type RouteHandler = ReturnType<ExecutionContext['getHandler']>;

export class RouteMemo<T> {
  private readonly byClass = new WeakMap<RouteClass, WeakMap<RouteHandler, T>>();

  constructor(private readonly compute: (cls: RouteClass, handler: RouteHandler) => T) {}

  of(ctx: ExecutionContext): T {
    const cls = ctx.getClass();
    const handler = ctx.getHandler();
    let byHandler = this.byClass.get(cls);
    if (!byHandler) this.byClass.set(cls, (byHandler = new WeakMap()));
    let value = byHandler.get(handler);
    if (value === undefined) byHandler.set(handler, (value = this.compute(cls, handler)));
    return value;
  }
}
