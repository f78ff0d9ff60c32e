import { BadRequestException, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import jwt from 'jsonwebtoken';
import { LRUCache } from 'lru-cache';
import type { KeyObject } from 'node:crypto';
import { Strategy } from 'passport-jwt';
import { isUuid } from '../common/roles.js';
import { Settings } from '../settings/settings.js';
import { looksLikeApiKey } from './api-key-format.js';
import { SESSION_STRATEGY, UNREGISTERED } from './auth.constants.js';
import { bearerToken } from './http-utils.js';
import type { Principal } from './principal.js';
import { decodeSessionToken, keyMaterial, SessionKeys } from './session-keys.js';
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
function sessionToken(req: SessionRequest): string | null {
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
export function withinSessionBounds(
  claims: { exp?: unknown; iat?: unknown },
  nowSeconds: number,
  maxAgeSeconds: number,
): boolean {
  const { exp, iat } = claims;
  if (typeof exp !== 'number' || !Number.isFinite(exp)) return false;
  if (iat === undefined) return exp - nowSeconds <= maxAgeSeconds;
  if (typeof iat !== 'number' || !Number.isFinite(iat) || iat > nowSeconds + IAT_SKEW_SECONDS) return false;
  return exp - iat <= maxAgeSeconds;
}

/** What the session strategy reads of a request: its headers, and its client address (after TRUST_PROXY). */
export interface SessionRequest {
  headers: Record<string, unknown>;
  ip?: string;
}

/**
 * Session JWTs. HS256 with SESSION_JWT_SECRET (held as a KeyObject: ~5x faster than a string),
 * or RS256/ES256 with a PEM public key or a JWKS endpoint (see SessionKeys). `sub` (UUID),
 * `email` and `exp` are required; the org is resolved later, only for routes that need one.
 *
 * CredentialGuard calls `verify` directly: a token verified within the last minute is answered
 * in the same turn, with no promise. passport-jwt's own path (`authenticate`, through the
 * options below) reaches the same keys and the same `validate`.
 */
@Injectable()
export class SessionStrategy extends PassportStrategy(Strategy, SESSION_STRATEGY) implements OnModuleDestroy {
  /**
   * Tokens whose signature, algorithm, issuer and audience have verified, with their claims, for
   * at most a minute and never past `exp`: a request presenting the same token skips decoding,
   * verifying and checking its claims again (they cannot change); the clock checks and
   * `X-Org-Id` still run every time. Keyed by signature (see `signatureOf`). Off with the
   * verification cache. Held only in this process's memory, which holds the keys that verify them.
   */
  private readonly verifiedTokens: LRUCache<string, VerifiedToken> | null;
  private readonly keys: SessionKeys;
  private readonly verifyOptions: jwt.VerifyOptions;

  constructor(private readonly settings: Settings) {
    const keys = new SessionKeys(settings);
    const verifyOptions: jwt.VerifyOptions = {
      algorithms: settings.sessionAlgorithms as jwt.Algorithm[],
      issuer: settings.issuer,
      audience: settings.audience,
    };
    super({
      // The same extraction as for API keys (RFC 6750: "Bearer", spaces, one token), so both
      // credentials accept exactly the same header forms.
      jwtFromRequest: sessionToken,
      algorithms: verifyOptions.algorithms,
      issuer: settings.issuer,
      audience: settings.audience,
      passReqToCallback: true,
      secretOrKeyProvider: (
        request: SessionRequest,
        rawToken: string,
        done: (err: unknown, key?: string | Buffer) => void,
      ) => {
        const decoded = decodeSessionToken(rawToken);
        const key = decoded ? keys.keyFor(decoded.header, request.ip) : null;
        void Promise.resolve(key).then((k) =>
          k ? done(null, keyMaterial(k)) : done(new Error('no key for this token')),
        );
      },
    });
    this.keys = keys;
    this.verifyOptions = verifyOptions;
    const cache = settings.verificationCache;
    this.verifiedTokens = cache.enabled ? new LRUCache({ max: cache.maxEntries, ttl: VERIFIED_TTL_MS }) : null;
  }

  /** Called by the @nestjs/passport mixin: see UNREGISTERED. */
  getPassportInstance() {
    return UNREGISTERED;
  }

  onModuleDestroy(): void {
    this.keys.stop();
  }

  /**
   * The principal of the request's session token, or null for a missing or invalid one (never a
   * throw, but the 400 of a malformed `X-Org-Id`). Synchronous unless a JWKS key must be fetched.
   */
  verify(request: SessionRequest): Principal | null | Promise<Principal | null> {
    const token = sessionToken(request);
    if (!token) return null;
    const entry = this.verifiedTokens?.get(signatureOf(token));
    if (entry && entry.token === token) {
      // jsonwebtoken's own clock checks, as it would run them now (no clock tolerance configured).
      const { claims } = entry;
      const now = Math.floor(Date.now() / 1000);
      if ((typeof claims.nbf !== 'number' || claims.nbf <= now) && now < (claims.exp as number)) {
        if (!withinSessionBounds(claims, Date.now() / 1000, this.settings.sessionMaxAgeSeconds)) return null;
        return sessionPrincipal(request, entry.session);
      }
      this.verifiedTokens!.delete(signatureOf(token));
    }
    const decoded = decodeSessionToken(token);
    const key = decoded ? this.keys.keyFor(decoded.header, request.ip) : null;
    if (key === null) return null;
    if (key instanceof Promise) return key.then((k) => (k ? this.verifyWith(request, token, k) : null));
    return this.verifyWith(request, token, key);
  }

  private verifyWith(request: SessionRequest, token: string, key: KeyObject): Principal | null {
    let claims: string | jwt.JwtPayload;
    try {
      claims = jwt.verify(token, key, this.verifyOptions);
    } catch {
      return null; // bad signature, algorithm, issuer, audience, exp or nbf: as passport-jwt, a failure
    }
    return typeof claims === 'string' ? null : this.validate(request, claims);
  }

  /** The verify callback (passport-jwt's, and `verify`'s): reached only once the token has verified. */
  validate(request: SessionRequest, claims: SessionClaims | null): Principal | null {
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
function sessionPrincipal(request: SessionRequest, session: SessionFacts): Principal {
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
