import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy } from 'passport-custom';
import { looksLikeApiKey } from './api-key-format.js';
import { ApiKeyVerifier } from './api-key-verifier.js';
import { API_KEY_STRATEGY, UNREGISTERED } from './auth.constants.js';
import { bearerToken } from './http-utils.js';
import type { Principal } from './principal.js';

/**
 * `svc_live_…` bearer tokens. Anything else, and any invalid key, is a plain failure (null),
 * never a throw; a database failure rejects. CredentialGuard calls `validate` directly: a key
 * answered from the verification cache is a value, not a promise, so it costs no promise hop.
 */
@Injectable()
export class ApiKeyStrategy extends PassportStrategy(Strategy, API_KEY_STRATEGY) {
  constructor(private readonly verifier: ApiKeyVerifier) {
    super();
  }

  /** Called by the @nestjs/passport mixin: see UNREGISTERED. */
  getPassportInstance() {
    return UNREGISTERED;
  }

  validate(request: { headers: Record<string, unknown> }): Principal | null | Promise<Principal | null> {
    const token = bearerToken(request.headers);
    if (!token || !looksLikeApiKey(token)) return null;
    return this.verifier.verify(token);
  }
}
