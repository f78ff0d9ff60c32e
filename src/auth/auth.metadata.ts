import { Reflector } from '@nestjs/core';
import type { Scope } from '../common/roles.js';

/** Which credentials a route accepts: any, or a browser session only. */
export type AuthMode = 'any' | 'session';
export const AuthModeMeta = Reflector.createDecorator<AuthMode>();
export const RequiredScopesMeta = Reflector.createDecorator<Scope[]>();
/**
 * Set by a decorator whose interceptor may still refuse a request the guards admitted (`@Charges`:
 * the org's meter): LastUseGuard then leaves the request's verification outcome to that
 * interceptor (VerificationOutcomeRecorder.settle) instead of counting it `valid`.
 */
export const OutcomeAfterGuardsMeta = Reflector.createDecorator<true>();
