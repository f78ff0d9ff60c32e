import { ChargesMeta } from '../budgets/charges.meta.js';

/**
 * Put on a host route (or controller) next to one of the auth decorators:
 * `@RequireScopes('decisions:write') @Charges('captures')`. A declaration only (typed metadata):
 * the budgets' SpendGuard, which every auth decorator lists, charges `count` units of `meter` to
 * the principal's org after the credential and scope checks and the key's own budgets (networks,
 * windows, credits), whichever decorator is written above the other, and before the route's pipes
 * and handler; all or nothing, by default from this instance's leased block of the org's limit
 * (docs/usage.md "Leased and exact charging"). The charge is given back only if the request is
 * refused before its handler (a pipe's 400). Exhausted meter: 429 with `Retry-After` (seconds
 * until the next UTC midnight), counted as the key's `usage_exceeded`. On a controller it charges
 * every route; a route's own `@Charges` overrides it (charging once). `meter` is one of the
 * contract's four or one the deployment defines (the module option `meters`, USAGE_METERS): a
 * route that names any other, or that has no auth decorator, stops the start, naming the route.
 */
export const Charges = (meter: string, count = 1): ClassDecorator & MethodDecorator => ChargesMeta({ meter, count });
