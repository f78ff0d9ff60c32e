import { BadRequestException, Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import jwt from 'jsonwebtoken';
import { JwksClient } from 'jwks-rsa';
import { LRUCache } from 'lru-cache';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { Strategy } from 'passport-jwt';
import { isUuid } from '../common/roles.js';
import { Settings } from '../settings/settings.js';
import { looksLikeApiKey } from './api-key-format.js';
import { SESSION_STRATEGY } from './auth.constants.js';
import { bearerToken } from './http-utils.js';
import { NO_GLOBAL_PASSPORT, PassportRegistry, type StrategyAttempt } from './passport-registry.js';
import type { Principal } from './principal.js';
import { ERRORS } from '../common/error-messages.js';

interface SessionClaims {
  sub?: unknown;
  email?: unknown;
  exp?: unknown;
  nbf?: unknown;
  iat?: unknown;
  org_id?: unknown;
}

/** How long a verified token is answered without verifying its signature again (the clock checks run every time). */
const VERIFIED_TTL_MS = 60_000;

/** The bearer token the session strategy reads: any bearer token that is not an API key. */
function sessionToken(req: { headers: Record<string, unknown> }): string | null {
  const token = bearerToken(req.headers);
  return token && !looksLikeApiKey(token) ? token : null;
}


/** Clock skew tolerated between the identity provider and us for `iat`. */
const IAT_SKEW_SECONDS = 60;

/**
 * `exp` must be a finite time within the maximum session age: counted from `iat` when the token
 * has one (and `iat` may not lie in the future), else from now (so a token without `iat` is
 * never good for longer than the maximum age from any moment it is presented).
 */
export function withinSessionBounds(claims: { exp?: unknown; iat?: unknown }, nowSeconds: number, maxAgeSeconds: number): boolean {
  const { exp, iat } = claims;
  if (typeof exp !== 'number' || !Number.isFinite(exp)) return false;
  if (iat === undefined) return exp - nowSeconds <= maxAgeSeconds;
  if (typeof iat !== 'number' || !Number.isFinite(iat) || iat > nowSeconds + IAT_SKEW_SECONDS) return false;
  return exp - iat <= maxAgeSeconds;
}

/**
 * Session JWTs. HS256 with SESSION_JWT_SECRET (held as a KeyObject: ~5x faster than a string),
 * or RS256/ES256 with a PEM public key or a JWKS endpoint. Only the algorithms we hold a key
 * for are accepted, so `alg: none` and HS/RS confusion fail. `sub` (UUID), `email` and `exp`
 * are required; the org is resolved later, only for routes that need one.
 */
@Injectable()
export class SessionStrategy extends PassportStrategy(Strategy, SESSION_STRATEGY) {
  /**
   * Tokens whose signature, algorithm, issuer and audience have verified, with their claims, for
   * at most a minute and never past `exp`: a request presenting the same token skips decoding,
   * verifying and checking its claims again (they cannot change); the clock checks and
   * `X-Org-Id` still run every time. Keyed by signature (see `signatureOf`). Off with the
   * verification cache. Held only in this process's memory, which holds the keys that verify them.
   */
  private readonly verifiedTokens: LRUCache<string, VerifiedToken> | null;

  constructor(private readonly settings: Settings, registry: PassportRegistry) {
    const jwks = settings.jwksUri ? new JwksClient({ jwksUri: settings.jwksUri, cache: true, rateLimit: true }) : null;
    // JWKS keys as KeyObjects, each built once (jwks-rsa caches the PEM; parsing it per request is not free).
    const keyObjects = new Map<string, KeyObject>();
    const prepared = (pem: string): KeyObject => {
      let key = keyObjects.get(pem);
      if (!key) {
        if (keyObjects.size >= 64) keyObjects.clear();
        key = createPublicKey(pem);
        keyObjects.set(pem, key);
      }
      return key;
    };
    super({
      // The same extraction as for API keys (RFC 6750: "Bearer", spaces, one token), so both
      // credentials accept exactly the same header forms.
      jwtFromRequest: sessionToken,
      algorithms: settings.sessionAlgorithms as jwt.Algorithm[],
      issuer: settings.issuer,
      audience: settings.audience,
      passReqToCallback: true,
      // passport-jwt's types predate KeyObject; jsonwebtoken 9 takes one and it is the fast path.
      secretOrKeyProvider: ((_req: unknown, rawToken: string, done: (err: unknown, key?: KeyObject) => void) => {
        const decoded = jwt.decode(rawToken, { complete: true });
        // jsonwebtoken throws (a 500) on a signed `null` payload: anything but a JSON object is refused here.
        const payload: unknown = decoded?.payload;
        if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return done(new Error('malformed token'));
        // RFC 7515 4.1.11: a `crit` header names extensions the verifier must understand; we
        // understand none, so any token carrying one is refused.
        if ((decoded?.header as { crit?: unknown } | undefined)?.crit !== undefined) return done(new Error('unsupported critical header'));
        const alg = decoded?.header.alg;
        if (alg === 'HS256' && settings.sessionSecret) return done(null, settings.sessionSecret);
        if ((alg === 'RS256' || alg === 'ES256') && settings.sessionPublicKey) return done(null, settings.sessionPublicKey);
        if ((alg === 'RS256' || alg === 'ES256') && jwks && decoded?.header.kid) {
          jwks
            .getSigningKey(decoded.header.kid)
            .then((k) => done(null, prepared(k.getPublicKey())))
            .catch((e: unknown) => done(e));
          return;
        }
        done(new Error('no key for this token'));
      }) as never,
    });
    registry.register(SESSION_STRATEGY, this);
    const cache = settings.verificationCache;
    this.verifiedTokens = cache.enabled ? new LRUCache({ max: cache.maxEntries, ttl: VERIFIED_TTL_MS }) : null;
  }

  /** passport-jwt's, except for a token verified within the last minute (see `verifiedTokens`). */
  override authenticate(req: { headers: Record<string, unknown> }, options?: unknown): void {
    const attempt = this as unknown as StrategyAttempt;
    const token = this.verifiedTokens ? sessionToken(req) : null;
    const entry = token ? this.verifiedTokens!.get(signatureOf(token)) : undefined;
    if (!entry || entry.token !== token) return (Strategy.prototype.authenticate as (this: unknown, r: unknown, o: unknown) => void).call(this, req, options);
    // jsonwebtoken's own clock checks, as it would run them now (no clock tolerance configured).
    const { claims } = entry;
    const now = Math.floor(Date.now() / 1000);
    if ((typeof claims.nbf === 'number' && claims.nbf > now) || now >= (claims.exp as number)) {
      this.verifiedTokens!.delete(signatureOf(token!));
      return (Strategy.prototype.authenticate as (this: unknown, r: unknown, o: unknown) => void).call(this, req, options);
    }
    if (!withinSessionBounds(claims, Date.now() / 1000, this.settings.sessionMaxAgeSeconds)) return attempt.fail();
    let principal: Principal;
    try {
      principal = sessionPrincipal(req, entry.session);
    } catch (error) {
      return attempt.error(error);
    }
    return attempt.success(principal);
  }

  // Called by the @nestjs/passport mixin; see PassportRegistry.
  getPassportInstance() {
    return NO_GLOBAL_PASSPORT;
  }

  /** passport-jwt's verify callback (through the mixin): reached only once the token has verified. */
  validate(request: { headers: Record<string, unknown> }, claims: SessionClaims | null): Principal | null {
    const session = sessionClaims(claims);
    // Wall-clock time, as jsonwebtoken's own `exp` and `nbf` checks use: every time check on a token agrees.
    if (!session || !withinSessionBounds(claims!, Date.now() / 1000, this.settings.sessionMaxAgeSeconds)) return null;
    const principal = sessionPrincipal(request, session);
    const token = this.verifiedTokens ? sessionToken(request) : null;
    if (token) {
      const ttl = Math.max(1, Math.min(VERIFIED_TTL_MS, (claims!.exp as number) * 1000 - Date.now()));
      this.verifiedTokens!.set(signatureOf(token), { token, claims: claims!, session }, { ttl });
    }
    return principal;
  }
}

/** What a session's verified claims say, checked once per token (they cannot change). */
interface SessionFacts {
  userId: string;
  email: string;
  /** The `org_id` claim, lower-cased, or null. */
  orgId: string | null;
}

/** A token verified within the last minute, by its signature (see `signatureOf`). */
interface VerifiedToken {
  token: string;
  claims: SessionClaims;
  session: SessionFacts;
}

/**
 * The cache key of a token: its signature segment. Hashing a whole JWT (hundreds of characters,
 * a new string per request) costs more than the rest of the cached lookup; the entry holds the
 * whole token and a hit needs it to be equal. Reaching that compare takes the exact signature,
 * the one secret part of a token, so its timing tells nothing a caller does not already hold.
 */
function signatureOf(token: string): string {
  return token.slice(token.lastIndexOf('.') + 1);
}

/** The facts of claims that are a session's (`sub` a UUID, `email`, `exp`, `org_id` absent or a UUID), else null. */
function sessionClaims(claims: SessionClaims | null): SessionFacts | null {
  // A correctly signed token may still carry any JSON as its payload (`null`, a number, an array).
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) return null;
  if (!isUuid(claims.sub) || typeof claims.email !== 'string' || typeof claims.exp !== 'number') return null;
  if (claims.org_id !== undefined && claims.org_id !== null && !isUuid(claims.org_id)) return null;
  const orgId = typeof claims.org_id === 'string' ? claims.org_id.toLowerCase() : null;
  return { userId: claims.sub.toLowerCase(), email: claims.email, orgId };
}

/** The request's principal: the org from the claim, else from `X-Org-Id` (400 when not a UUID). */
function sessionPrincipal(request: { headers: Record<string, unknown> }, session: SessionFacts): Principal {
  let requested = session.orgId;
  if (!requested) {
    const header = request.headers['x-org-id'];
    if (header !== undefined) {
      if (!isUuid(header)) throw new BadRequestException(ERRORS.orgHeaderNotUuid);
      requested = header.toLowerCase();
    }
  }
  return {
    kind: 'session',
    userId: session.userId,
    email: session.email,
    orgId: null,
    orgRole: null,
    orgMemberCount: 0,
    plan: null,
    scopes: [],
    requestedOrgId: requested,
  };
}
