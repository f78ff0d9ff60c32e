import { applyDecorators, UseInterceptors } from '@nestjs/common';
import { OutcomeAfterGuardsMeta } from '../auth/auth.metadata.js';
import { ChargeInterceptor, ChargesMeta } from './charge.interceptor.js';

/**
 * Put on a host route (or controller) next to an auth decorator:
 * `@RequireScopes('decisions:write') @Charges('captures')`. Sets what the route charges and the
 * ChargeInterceptor that charges it: the principal's org, after every guard and before the
 * route's pipes and handler, all or nothing (by default from this instance's leased block of the
 * org's limit, docs/usage.md "Leased and exact charging"); the charge is given back only if the
 * request is refused before its handler (a pipe's 400). Exhausted meter: 429 with `Retry-After` (seconds until the next UTC midnight). On a
 * controller it charges every route; a route's own `@Charges` overrides it (charging once).
 * A key's own limits (KeyLimitsGuard, which the auth decorators list) come first whichever
 * decorator is written above the other, since guards run before interceptors: windows and
 * credits, then meters. A key's verification outcome is then the charge's to decide
 * (`usage_exceeded` when the meter refuses), so the guards leave it to the interceptor.
 * `meter` is one of the contract's four or one the deployment defines (the module option `meters`,
 * USAGE_METERS): a route that names any other stops the start, naming the route and the meter.
 */
export const Charges = (meter: string, count = 1): ClassDecorator & MethodDecorator =>
  applyDecorators(ChargesMeta({ meter, count }), OutcomeAfterGuardsMeta(true), UseInterceptors(ChargeInterceptor));
