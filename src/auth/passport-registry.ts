import { Injectable } from '@nestjs/common';
import passport from 'passport';
import type { Strategy } from 'passport';

/**
 * A passport instance per module instance. @nestjs/passport registers strategies on the one
 * global passport object, so two apps (or two configurations) in one process would overwrite
 * each other's strategies: the last one started would authenticate for all, and a host's own
 * `api-key` strategy would replace ours or be replaced by it. Our strategies register here
 * instead, and CredentialGuard authenticates through this instance.
 *
 * This is for correctness, not speed: per request it is the same one `passport.authenticate`
 * call that @nestjs/passport's AuthGuard makes. The strategies still come from its
 * `PassportStrategy` mixin; only the global registration is skipped. Tests that start several
 * instances in one process need it (test/e2e/verification-cache.test.ts starts three, each with
 * its own cache and lease): on the global object all three would verify through the last one's.
 */
@Injectable()
export class PassportRegistry {
  // Typed without @types/passport's Express default, so the declarations a host reads name no express.
  readonly passport: passport.Authenticator<unknown> = new passport.Passport();

  register(name: string, strategy: Strategy): void {
    this.passport.use(name, strategy);
  }
}

/** Handed to @nestjs/passport's mixin so that it registers nothing globally. */
export const NO_GLOBAL_PASSPORT = { use: () => undefined } as unknown as passport.PassportStatic;

/**
 * What a strategy's `authenticate` reports through: passport sets these on the strategy for each
 * attempt. Our strategies override `authenticate` to answer a cached credential in the same turn.
 */
export interface StrategyAttempt {
  success(user: unknown): void;
  fail(challenge?: unknown): void;
  error(err: unknown): void;
}
