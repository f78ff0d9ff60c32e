import { Reflector } from '@nestjs/core';

/** A route's place among a key's limits: the window name it counts against and its cost. */
export interface RateLimitSpec {
  window: string;
  cost: number;
}

export const RateLimitedMeta = Reflector.createDecorator<RateLimitSpec>();

/** Every route without `@RateLimited`: the window named `default`, one unit. */
export const DEFAULT_RATE_LIMIT: RateLimitSpec = { window: 'default', cost: 1 };

/**
 * A host route's share of a key's limits: requests with a key count `cost` units against the
 * key's window named `window` (or its plan's) and spend `cost` credits. Put it beside one of the
 * auth decorators (`@Authenticated()`, `@RequireScopes()`), which enforce it.
 */
export const RateLimited = (window = 'default', options: { cost?: number } = {}): ClassDecorator & MethodDecorator => {
  const cost = options.cost ?? 1;
  if (!Number.isSafeInteger(cost) || cost < 1) throw new Error('@RateLimited: cost must be a positive integer');
  return RateLimitedMeta({ window, cost });
};
