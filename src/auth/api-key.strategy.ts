import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy } from 'passport-custom';
import { looksLikeApiKey } from './api-key-format.js';
import { ApiKeyVerifier } from './api-key-verifier.js';
import { API_KEY_STRATEGY } from './auth.constants.js';
import { bearerToken } from './http-utils.js';
import { NO_GLOBAL_PASSPORT, PassportRegistry, type StrategyAttempt } from './passport-registry.js';
import type { Principal } from './principal.js';


/**
 * `svc_live_…` bearer tokens. Anything else, and any invalid key, is a plain failure (null),
 * never a throw, so the session strategy still gets its turn; a database failure is an error.
 */
@Injectable()
export class ApiKeyStrategy extends PassportStrategy(Strategy, API_KEY_STRATEGY) {
  constructor(
    private readonly verifier: ApiKeyVerifier,
    registry: PassportRegistry,
  ) {
    super();
    registry.register(API_KEY_STRATEGY, this);
  }

  // Called by the @nestjs/passport mixin; see PassportRegistry.
  getPassportInstance() {
    return NO_GLOBAL_PASSPORT;
  }

  validate(request: { headers: Record<string, unknown> }): Principal | null | Promise<Principal | null> {
    const token = bearerToken(request.headers);
    if (!token || !looksLikeApiKey(token)) return null;
    return this.verifier.verify(token);
  }

  /**
   * passport-custom's `authenticate`, minus the @nestjs/passport mixin's async wrapper around
   * `validate`: a cached key is reported to passport (`success`, `fail`, `error`, set per attempt
   * by passport) in the same turn. The answers are the mixin's: null fails, a throw or a rejection
   * is an error.
   */
  override authenticate(req: { headers: Record<string, unknown> }): void {
    const attempt = this as unknown as StrategyAttempt;
    let answer: Principal | null | Promise<Principal | null>;
    try {
      answer = this.validate(req);
    } catch (error) {
      return attempt.error(error);
    }
    if (answer === null || !('then' in answer)) return answer ? attempt.success(answer) : attempt.fail();
    answer.then(
      (principal) => (principal ? attempt.success(principal) : attempt.fail()),
      (error: unknown) => attempt.error(error),
    );
  }
}
