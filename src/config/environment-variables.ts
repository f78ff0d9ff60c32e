import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Matches, Max, Min, MinLength } from 'class-validator';
import { toInt, toBool, emptyToUndefined } from './env-transforms.js';
import { BaseEnvironment } from './environment-base.js';

/** The process environment, typed and checked before anything starts: plans, retention, logging, cache, metrics, events. */
export class EnvironmentVariables extends BaseEnvironment {
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  PLAN_LIMITS?: string;

  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  PLAN_LIMITS_FILE?: string;

  /** The scopes keys may hold beyond the contract's two, as JSON (docs/configuration.md, "Scopes"). */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  API_KEY_SCOPES?: string;

  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  API_KEY_SCOPES_FILE?: string;

  /** The deployment's own meters beside the contract's four, as JSON (docs/usage.md, "Meters the deployment defines"). */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  USAGE_METERS?: string;

  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  USAGE_METERS_FILE?: string;

  /** Per plan, the rate windows every key of the plan is held to, in addition to its own, as JSON (docs/key-controls.md); unset: none. */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  PLAN_RATE_LIMITS?: string;

  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  TRUST_PROXY?: string;

  /** Days an audit event is kept before the retention job prunes it; 0 keeps events forever, else at least 30. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(36500)
  AUDIT_RETENTION_DAYS = 400;

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /** Days of daily usage history kept (docs/usage.md, "History and retention"). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3660)
  USAGE_RETENTION_DAYS = 400;

  /** off: charge transactions commit with synchronous_commit = off (docs/usage.md, "Durability of charges"). */
  @Transform(toBool)
  @IsBoolean()
  USAGE_SYNCHRONOUS_COMMIT = true;

  /** How `@Charges` charges the org's daily meters (docs/usage.md, "Leased and exact charging"). */
  @IsIn(['leased', 'exact'])
  USAGE_CHARGING: 'leased' | 'exact' = 'leased';

  /** json (one object per line) or pretty; unset: pretty when NODE_ENV=development, else json. */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsIn(['json', 'pretty'])
  LOG_FORMAT?: 'json' | 'pretty';

  /** Verification cache under leases (docs/verification-cache.md; in-process on the embedded database); false: a database read per request. */
  @Transform(toBool)
  @IsBoolean()
  VERIFICATION_CACHE = true;

  /** How long an instance's cache lease lasts: the longest a revoke waits for an instance that stopped answering. */
  @Transform(toInt)
  @IsInt()
  @Min(300)
  @Max(60000)
  VERIFICATION_CACHE_LEASE_MS = 3000;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  VERIFICATION_CACHE_MAX_ENTRIES = 10_000;

  /** When set, GET /metrics requires `Authorization: Bearer <METRICS_TOKEN>`. */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  @MinLength(16, { message: 'METRICS_TOKEN must be at least 16 characters' })
  METRICS_TOKEN?: string;

  /**
   * The operator's bearer token for `/admin/...` (a person's export and erasure). Unset: those
   * routes answer 404. Never a session or an API key.
   */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  @MinLength(32, { message: 'ADMIN_API_TOKEN must be at least 32 characters' })
  ADMIN_API_TOKEN?: string;

  /** How long a rendered /metrics is served again (ms); 0 renders every scrape. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(60_000)
  METRICS_CACHE_MS = 1_000;

  /**
   * Without METRICS_TOKEN, loopback clients (after the TRUST_PROXY rules) may scrape /metrics on the
   * API port. Unset: true outside production, false in production.
   */
  @Transform(toBool)
  @IsOptional()
  @IsBoolean({ message: 'METRICS_ALLOW_LOOPBACK must be true or false' })
  METRICS_ALLOW_LOOPBACK?: boolean;

  /** Address the METRICS_PORT listener binds to: loopback unless you say otherwise. */
  @IsString()
  @MinLength(1)
  METRICS_HOST = '127.0.0.1';
  // Events out (docs/events.md): webhooks, the job queue, leaked-key reports.

  /** Run the outbox relay, webhook deliveries and the expiry scan in this process. */
  @Transform(toBool)
  @IsBoolean()
  EVENTS_WORKER = true;

  /** How often idle workers and the relay look for work (a write on this instance wakes the relay at once). */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(60_000)
  EVENTS_POLL_INTERVAL_MS = 1000;

  /** pg-boss's own pool (it never borrows the app's). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(50)
  EVENTS_QUEUE_POOL_MAX = 2;

  /** Retries after the first attempt (exponential backoff with jitter: about 20 hours with the defaults). */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(100)
  WEBHOOK_RETRY_LIMIT = 18;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(86_400)
  WEBHOOK_RETRY_DELAY_SECONDS = 15;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(86_400)
  WEBHOOK_RETRY_DELAY_MAX_SECONDS = 7200;

  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(60_000)
  WEBHOOK_TIMEOUT_MS = 10_000;

  /** Comma-separated CIDRs webhooks may reach although private or loopback (e.g. 127.0.0.1/32). */
  @Transform(emptyToUndefined)
  @IsOptional()
  @Matches(/^\s*[0-9a-fA-F:.]+(\/\d{1,3})?(\s*,\s*[0-9a-fA-F:.]+(\/\d{1,3})?)*\s*$/, {
    message: 'WEBHOOK_ALLOW_CIDRS must be a comma-separated list of addresses or CIDRs',
  })
  WEBHOOK_ALLOW_CIDRS?: string;

  /** Ports webhooks may reach, comma-separated ports or ranges (`443,8443,9000-9099`); default 443, plus 80 outside production. */
  @Transform(emptyToUndefined)
  @IsOptional()
  @Matches(/^\s*\d{1,5}(-\d{1,5})?(\s*,\s*\d{1,5}(-\d{1,5})?)*\s*$/, {
    message: 'WEBHOOK_ALLOWED_PORTS must be a comma-separated list of ports or ranges (e.g. 443,8000-8099)',
  })
  WEBHOOK_ALLOWED_PORTS?: string;

  /** Webhook endpoints an org may have (creating one more: 409). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  WEBHOOK_MAX_ENDPOINTS_PER_ORG = 10;

  /** Test and retry requests an org may make per minute, per instance (beyond: 429 with Retry-After); 0 turns it off. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(100_000)
  WEBHOOK_SEND_RATE_LIMIT = 10;

  /** Delivery slots one org may hold at once on an instance (of its 4): a slow receiver cannot hold them all. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(4)
  WEBHOOK_ORG_CONCURRENCY = 2;

  /** Cron of the expiry scan (pg-boss schedule). */
  @IsString()
  @MinLength(9)
  EVENTS_EXPIRY_SCAN_CRON = '*/5 * * * *';

  /** GitHub secret scanning public keys: JSON list of {key_identifier, key}. */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  GITHUB_SECRET_SCANNING_KEYS?: string;

  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  GITHUB_SECRET_SCANNING_KEYS_FILE?: string;

  /** POST /credentials/revoke per client address per minute (0 = off). */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(1_000_000)
  CREDENTIALS_REVOKE_LIMIT = 10;

  /** When set, /metrics is served on this port only (0: any free port), not on PORT. */
  @Transform(emptyToUndefined)
  @Transform(toInt)
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(65535)
  METRICS_PORT?: number;

  /** Active service keys an org may hold (mint beyond: 409). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100_000)
  MAX_ACTIVE_SERVICE_KEYS_PER_ORG = 100;
}
