import type { Clock } from '../common/clock.js';
import type { PlanLimits } from '../common/plan-limits.js';

export interface SessionVerificationOptions {
  /** HS256 shared secret. */
  secret?: string;
  /** PEM public key (RS256 / ES256) of the identity provider. */
  publicKey?: string;
  /** JWKS endpoint of the identity provider (RS256 / ES256, keys picked by `kid`). */
  jwksUri?: string;
  /** When set, the `iss` claim must equal it. */
  issuer?: string;
  /** When set, the `aud` claim must contain it. */
  audience?: string;
}

export interface KeysUsageIdentityOptions {
  /**
   * HMAC key for API key hashes. Unset means "API keys are not configured on this deployment":
   * the lifecycle endpoints answer 501 and API-key authentication fails.
   */
  apiKeySecret?: string | null;
  session: SessionVerificationOptions;
  /** Daily limits per plan; defaults to the documented free/pro limits. */
  planLimits?: PlanLimits;
  /** Failed authentications per client address per minute before 429; 0 turns throttling off. */
  authFailureLimit?: number;
  /** Audit events older than this many days are pruned by the retention job (default 400; 0 = keep forever). */
  auditRetentionDays?: number;
  /** Time source; tests inject a fixed clock. */
  clock?: Clock;
}
