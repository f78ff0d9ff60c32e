import { createPublicKey, createSecretKey, type KeyObject } from 'node:crypto';
import { SystemClock, type Clock } from '../common/clock.js';
import { parsePlanLimits, type PlanLimits } from '../common/plan-limits.js';
import { MeterRegistry } from '../common/meter-registry.js';
import { DEFAULT_PLAN_RATE_LIMITS, type PlanRateLimits } from '../common/plan-rate-limits.js';
import { ScopeRegistry } from '../common/scope-registry.js';
import type {
  DatabaseOptions,
  KeysUsageIdentityOptions,
  UsageCharging,
  VerificationCacheOptions,
} from './keys-usage-identity.options.js';

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
  /** The scopes keys may hold (the contract's two unless the `scopes` option adds more). */
  readonly scopes: ScopeRegistry;
  /** The meters charged and reported (the contract's four unless the `meters` option adds more). */
  readonly meters: MeterRegistry;
  /** Per plan, the rate windows every key of the plan is held to, in addition to its own (docs/key-controls.md). */
  readonly planRateLimits: PlanRateLimits;
  readonly authFailureLimit: number;
  readonly maxActiveKeysPerUserOrg: number;
  readonly maxActiveServiceKeysPerOrg: number;
  readonly mintRatePerMinute: number;
  readonly sessionMaxAgeSeconds: number;
  readonly clock: Clock;
  /** Audit events older than this many days are pruned; 0 keeps them forever. */
  readonly auditRetentionDays: number;
  readonly verificationCache: Required<VerificationCacheOptions>;
  readonly usageRetentionDays: number;
  readonly usagePruneEveryMs: number;
  readonly usageSynchronousCommit: boolean;
  /** `leased`: meters charged from instance leases; `exact`: every charge committed before the answer. */
  readonly usageCharging: UsageCharging;
  /** The session-mode connection beside a pooled DataSource, and what the pooled one may do. */
  readonly database: {
    directUrl: string | null;
    namedStatements: boolean;
    transactionStatementTimeoutMs: number | null;
    idleInTransactionMs: number;
  };

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
    this.scopes = new ScopeRegistry(options.scopes, 'KeysUsageIdentityModule option scopes');
    this.meters = new MeterRegistry(options.meters, 'KeysUsageIdentityModule option meters');
    // Checked like PLAN_LIMITS: a limit for a meter the deployment does not define stops the start.
    this.planLimits = parsePlanLimits(
      options.planLimits ?? {},
      'KeysUsageIdentityModule option planLimits',
      this.meters.deployment,
    );
    this.planRateLimits = options.planRateLimits ?? DEFAULT_PLAN_RATE_LIMITS;
    this.authFailureLimit = options.authFailureLimit ?? 30;
    this.maxActiveKeysPerUserOrg = options.maxActiveKeysPerUserOrg ?? 100;
    this.maxActiveServiceKeysPerOrg = options.maxActiveServiceKeysPerOrg ?? 100;
    this.mintRatePerMinute = options.mintRatePerMinute ?? 30;
    this.sessionMaxAgeSeconds = options.sessionMaxAgeSeconds ?? 86_400;
    this.clock = options.clock ?? new SystemClock();
    this.auditRetentionDays = options.auditRetentionDays ?? 400;
    const cache = options.verificationCache ?? {};
    this.verificationCache = {
      enabled: cache.enabled ?? true,
      leaseMs: cache.leaseMs ?? 3000,
      maxEntries: cache.maxEntries ?? 10_000,
    };
    if (!Number.isInteger(this.verificationCache.leaseMs) || this.verificationCache.leaseMs < 300) {
      throw new Error('verificationCache.leaseMs must be an integer of at least 300');
    }
    if (!Number.isInteger(this.verificationCache.maxEntries) || this.verificationCache.maxEntries < 1) {
      throw new Error('verificationCache.maxEntries must be a positive integer');
    }
    this.usageRetentionDays = options.usage?.retentionDays ?? 400;
    if (!Number.isSafeInteger(this.usageRetentionDays) || this.usageRetentionDays < 1)
      throw new Error('usage.retentionDays must be a positive integer');
    this.usagePruneEveryMs = options.usage?.pruneEveryMs ?? 3_600_000;
    this.usageSynchronousCommit = options.usage?.synchronousCommit ?? true;
    this.usageCharging = options.usage?.charging ?? 'leased';
    if (this.usageCharging !== 'leased' && this.usageCharging !== 'exact')
      throw new Error(`usage.charging must be "leased" or "exact"; got ${JSON.stringify(this.usageCharging)}`);
    this.database = databaseSettings(options.database ?? {});
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

function databaseSettings(o: DatabaseOptions): Settings['database'] {
  const directUrl = o.directUrl || null;
  if (directUrl !== null && !/^postgres(ql)?:\/\/[^/]/.test(directUrl))
    throw new Error('database.directUrl must be a postgres:// or postgresql:// URL');
  const timeout = o.transactionStatementTimeoutMs ?? null;
  if (timeout !== null && (!Number.isInteger(timeout) || timeout < 1))
    throw new Error('database.transactionStatementTimeoutMs must be a positive integer');
  const idle = o.idleInTransactionMs ?? 10_000;
  if (!Number.isInteger(idle) || idle < 1) throw new Error('database.idleInTransactionMs must be a positive integer');
  return {
    directUrl,
    namedStatements: o.namedStatements ?? directUrl === null,
    transactionStatementTimeoutMs: timeout,
    idleInTransactionMs: idle,
  };
}
