import { createPublicKey, createSecretKey, type KeyObject } from 'node:crypto';
import { SystemClock, type Clock } from '../common/clock.js';
import { DEFAULT_PLAN_LIMITS, type PlanLimits } from '../common/plan-limits.js';
import type { KeysUsageIdentityOptions } from './keys-usage-identity.options.js';

/**
 * The module's options turned into what the hot paths need: KeyObjects built once
 * (a string HS256 secret makes jsonwebtoken ~5x slower), defaults filled in.
 */
export class Settings {
  readonly apiKeySecret: KeyObject | null;
  readonly sessionSecret: KeyObject | null;
  readonly sessionPublicKey: KeyObject | null;
  readonly jwksUri: string | null;
  readonly issuer: string | undefined;
  readonly audience: string | undefined;
  readonly planLimits: PlanLimits;
  readonly authFailureLimit: number;
  readonly clock: Clock;
  /** Audit events older than this many days are pruned; 0 keeps them forever. */
  readonly auditRetentionDays: number;

  constructor(options: KeysUsageIdentityOptions) {
    this.apiKeySecret = options.apiKeySecret ? createSecretKey(Buffer.from(options.apiKeySecret, 'utf8')) : null;
    const session = options.session ?? {};
    this.sessionSecret = session.secret ? createSecretKey(Buffer.from(session.secret, 'utf8')) : null;
    this.sessionPublicKey = session.publicKey ? createPublicKey(session.publicKey) : null;
    this.jwksUri = session.jwksUri ?? null;
    this.issuer = session.issuer || undefined;
    this.audience = session.audience || undefined;
    if (!this.sessionSecret && !this.sessionPublicKey && !this.jwksUri) {
      throw new Error('Session verification needs a secret, a public key or a JWKS URI');
    }
    this.planLimits = options.planLimits ?? DEFAULT_PLAN_LIMITS;
    this.authFailureLimit = options.authFailureLimit ?? 30;
    this.clock = options.clock ?? new SystemClock();
    this.auditRetentionDays = options.auditRetentionDays ?? 400;
  }

  get keysConfigured(): boolean {
    return this.apiKeySecret !== null;
  }

  /** Algorithms a session token may use: only those we hold a key for. */
  get sessionAlgorithms(): string[] {
    const algs: string[] = [];
    if (this.sessionSecret) algs.push('HS256');
    if (this.sessionPublicKey || this.jwksUri) algs.push('RS256', 'ES256');
    return algs;
  }
}
