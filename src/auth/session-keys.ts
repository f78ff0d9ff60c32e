import jwt from 'jsonwebtoken';
import type { KeyObject } from 'node:crypto';
import type { Settings } from '../settings/settings.js';
import { JwksKeySet } from './jwks-key-set.js';

/**
 * The keys a session token may be verified with, picked by its header: HS256 with
 * SESSION_JWT_SECRET, RS256/ES256 with the PEM public key or the JWKS key its `kid` names. An
 * algorithm we hold no key for has none, so `alg: none` and HS/RS confusion fail.
 */
export class SessionKeys {
  private readonly jwks: JwksKeySet | null;

  constructor(private readonly settings: Settings) {
    this.jwks = settings.jwksUri ? new JwksKeySet(settings.jwksUri, settings.clock) : null;
  }

  stop(): void {
    this.jwks?.stop();
  }

  /** The key for a token's header, at once unless a JWKS fetch is needed; null: none (the token fails). */
  keyFor(header: jwt.JwtHeader, client: string | undefined): KeyObject | null | Promise<KeyObject | null> {
    const alg = header.alg;
    if (alg === 'HS256') return this.settings.sessionSecret;
    if (alg !== 'RS256' && alg !== 'ES256') return null;
    if (this.settings.sessionPublicKey) return this.settings.sessionPublicKey;
    return this.jwks && typeof header.kid === 'string' ? this.jwks.key(header.kid, client) : null;
  }
}

/**
 * A token's header and payload, unverified, or null for anything that is not a JWT whose header
 * and payload are JSON objects (jsonwebtoken throws, a 500, on a signed `null` payload; a header
 * such as `" "` makes `'crit' in` throw) or that carries `crit` (RFC 7515 4.1.11: extensions the
 * verifier must understand; we understand none).
 */
export function decodeSessionToken(token: string): jwt.Jwt | null {
  const decoded = jwt.decode(token, { complete: true });
  if (!decoded || !isJsonObject(decoded.payload) || !isJsonObject(decoded.header)) return null;
  return 'crit' in decoded.header ? null : decoded;
}

/** The key as jsonwebtoken's string/Buffer types take it: for passport-jwt only (our guard passes the KeyObject). */
export function keyMaterial(key: KeyObject): string | Buffer {
  return key.type === 'secret' ? key.export() : key.export({ type: 'spki', format: 'pem' });
}

function isJsonObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
