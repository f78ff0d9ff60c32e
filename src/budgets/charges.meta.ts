import { Reflector } from '@nestjs/core';

/** What a route charges: `count` units of `meter` of the principal's org per request. */
export interface ChargeSpec {
  /** A meter of the deployment's registry (checked at start: checkRouteMeters). */
  meter: string;
  count: number;
}

/**
 * The typed metadata `@Charges` (usage/charges.decorator.ts) sets on a route or a controller (a
 * route's own overrides its controller's): a declaration that the budgets' SpendGuard reads.
 */
export const ChargesMeta = Reflector.createDecorator<ChargeSpec>();
