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
  /** Usage history and charging (issue 16). */
  usage?: UsageOptions;
  /** Audit events older than this many days are pruned by the retention job (default 400; 0 = keep forever). */
  auditRetentionDays?: number;
  /** Time source; tests inject a fixed clock. */
  clock?: Clock;
}

export interface UsageOptions {
  /** Days of daily history kept per org, meter and credential (default 400); older days are pruned in bounded batches. */
  retentionDays?: number;
  /** How often the pruning runs, in ms (default one hour; 0 = never, e.g. for a CLI). */
  pruneEveryMs?: number;
  /**
   * `false` commits charge transactions with `synchronous_commit = off`: faster, but a database
   * crash can lose the last few hundred milliseconds of committed charges (see README). Default true.
   */
  synchronousCommit?: boolean;
}
