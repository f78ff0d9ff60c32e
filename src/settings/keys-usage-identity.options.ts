import type { Clock } from '../common/clock.js';
import type { PlanLimits } from '../common/plan-limits.js';
import type { PlanRateLimits } from '../common/plan-rate-limits.js';
import type { ScopeRegistryInput } from '../common/scope-registry.js';
import type { MeterRegistryInput } from '../common/meter-registry.js';

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

export interface VerificationCacheOptions {
  /**
   * Answer verifications (API keys, a session's org standing) from an in-process cache while this
   * instance holds a lease (default true). Needs the built-in directory and a PostgreSQL `pg`
   * pool; otherwise every request reads the database, as with false.
   */
  enabled?: boolean;
  /** Lease length in ms (default 3000): the longest a change waits for an unresponsive instance. */
  leaseMs?: number;
  /** Entries per cache (default 10000): keys, and sessions' org standings. */
  maxEntries?: number;
}

/**
 * The DataSource's connections when they go through a transaction pooler (PgBouncer
 * `pool_mode = transaction`, RDS Proxy, Supavisor): what needs a session goes on `directUrl`
 * instead (docs/operations.md, "High availability").
 */
export interface DatabaseOptions {
  /**
   * A session-mode connection to the same database (PostgreSQL itself, or a pooler in session
   * mode): the verification cache's LISTEN connection and its acknowledgements run here.
   * Unset: they run on the DataSource's own connection settings (which must then be session mode).
   */
  directUrl?: string;
  /**
   * Run the hot paths' statements as named (server-side prepared) statements. Default: true
   * without `directUrl`, false with it (a transaction pooler hands each transaction to any
   * server connection, where the statement was never prepared; PgBouncer keeps them only from
   * 1.21 with `max_prepared_statements`).
   */
  namedStatements?: boolean;
  /**
   * Through a pooler that refuses startup parameters: every transaction the DataSource's pool
   * opens starts with `SET LOCAL statement_timeout` to this (ms), in the same round trip as its
   * BEGIN, and `idle_in_transaction_session_timeout` to `idleInTransactionMs`. Unset: nothing is added.
   */
  transactionStatementTimeoutMs?: number;
  /** With transactionStatementTimeoutMs: the idle-in-transaction bound (ms, default 10000). */
  idleInTransactionMs?: number;
}

export interface KeysUsageIdentityOptions {
  /** Connections through a transaction pooler (docs/operations.md, "High availability"). */
  database?: DatabaseOptions;
  /**
   * HMAC key for API key hashes. Unset means "API keys are not configured on this deployment":
   * the lifecycle endpoints answer 501 and API-key authentication fails.
   */
  apiKeySecret?: string | null;
  session: SessionVerificationOptions;
  /**
   * The scopes keys may hold beyond (or redefining the roles of) the contract's `decisions:read` and
   * `decisions:write`: `{ 'invoices:read': { description, roles: ['owner', 'admin', 'member'] } }`
   * (docs/embedding.md, "Your own scopes"). A malformed entry stops the start, naming it.
   */
  scopes?: ScopeRegistryInput;
  /**
   * The meters this deployment counts beside the contract's `asks`, `retrieves`, `imports` and
   * `captures`: `{ exports: { description: 'Report exports' } }` (docs/embedding.md, "Your own
   * meters"). `@Charges` and `UsageService.charge` take any of them; a malformed entry stops the start, naming it.
   */
  meters?: MeterRegistryInput;
  /**
   * Daily limits per plan; defaults to the documented free/pro limits. A meter of `meters` has its
   * limit under its own name (`free: { …, exports: 5 }`) and is unlimited where it has none; a
   * name that is not a meter stops the start.
   */
  planLimits?: PlanLimits;
  /** Per plan, the rate windows every key of the plan is held to, in addition to its own; default none (docs/key-controls.md). */
  planRateLimits?: PlanRateLimits;
  /** Failed authentications per client address per minute before 429; 0 turns throttling off. */
  authFailureLimit?: number;
  /** Audit events older than this many days are pruned by the retention job (default 400; 0 = keep forever). */
  auditRetentionDays?: number;
  /** The verification cache and its leases (docs/verification-cache.md). */
  verificationCache?: VerificationCacheOptions;
  /** Active (not revoked, not expired) keys a user may hold per org; mint beyond it is a 409. Default 100. */
  maxActiveKeysPerUserOrg?: number;
  /** Active service keys an org may hold (`POST /orgs/{org_id}/service-keys` beyond it is a 409). Default 100. */
  maxActiveServiceKeysPerOrg?: number;
  /** Mints per user per minute (per instance) before 429 with Retry-After; 0 turns it off. Default 30. */
  mintRatePerMinute?: number;
  /** Longest a session JWT may live, in seconds from `iat` (or from now without `iat`). Default 86400. */
  sessionMaxAgeSeconds?: number;
  /** Usage history and charging (docs/usage.md). */
  usage?: UsageOptions;
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
   * crash can lose the last few hundred milliseconds of committed charges (docs/usage.md, "Durability of charges"). Default true.
   */
  synchronousCommit?: boolean;
  /**
   * How `@Charges` and `UsageService.charge` charge the daily meters (docs/usage.md, "Leased and
   * exact charging"). `leased` (default): each instance leases a block of an org's meter from
   * PostgreSQL, spends it from memory and writes the counts at least every second (a `kill -9`
   * may leave the last second's charges of that instance uncounted). `exact`: every charge is
   * committed before the answer. Every instance of a deployment uses the same setting.
   */
  charging?: UsageCharging;
}

export type UsageCharging = 'leased' | 'exact';
