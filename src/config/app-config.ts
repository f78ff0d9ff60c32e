import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { plainToInstance, Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  validateSync,
} from 'class-validator';
import { parsePlanLimits, type PlanLimits } from '../common/plan-limits.js';
import type { KeysUsageIdentityOptions } from '../settings/keys-usage-identity.options.js';
import { productionSessionProblems } from './session-requirements.js';

const toInt = ({ value }: { value: unknown }) =>
  typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value.trim()) : value;
const toBool = ({ value }: { value: unknown }) => {
  if (typeof value !== 'string') return value;
  const v = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  return value;
};
const emptyToUndefined = ({ value }: { value: unknown }) => (value === '' ? undefined : value);

/** The process environment, typed and checked before anything starts. */
export class EnvironmentVariables {
  @IsOptional() @IsIn(['development', 'production', 'test'])
  NODE_ENV: 'development' | 'production' | 'test' = 'development';

  @Transform(toInt) @IsInt() @Min(0) @Max(65535)
  PORT = 3000;

  @IsString() @MinLength(1)
  HOST = '0.0.0.0';

  @Transform(emptyToUndefined) @IsOptional() @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_URL must be a postgres:// or postgresql:// URL' })
  DATABASE_URL?: string;

  /**
   * The schema owner's connection, for migrations only (and the grants to DATABASE_URL's role
   * that follow them). Unset: migrations run through DATABASE_URL, whose role then owns the schema.
   */
  @Transform(emptyToUndefined) @IsOptional() @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_MIGRATION_URL must be a postgres:// or postgresql:// URL' })
  DATABASE_MIGRATION_URL?: string;

  @IsString() @MinLength(1)
  DATA_DIR = './.data';

  @Transform(toBool) @IsBoolean()
  DB_MIGRATE = true;

  @Transform(toInt) @IsInt() @Min(1) @Max(200)
  DB_POOL_MAX = 10;

  /** Connections kept open however idle (at most DB_POOL_MAX): the first statement after a quiet spell does not pay a connect. */
  @Transform(toInt) @IsInt() @Min(0) @Max(200)
  DB_POOL_MIN = 2;

  @Transform(toInt) @IsInt() @Min(100) @Max(60000)
  DB_CONNECT_TIMEOUT_MS = 3000;

  @Transform(toInt) @IsInt() @Min(100) @Max(600000)
  DB_STATEMENT_TIMEOUT_MS = 4000;

  @Transform(emptyToUndefined) @IsOptional() @IsString() @MinLength(32, { message: 'SESSION_JWT_SECRET must be at least 32 characters' })
  SESSION_JWT_SECRET?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString() @Matches(/-----BEGIN PUBLIC KEY-----/, { message: 'SESSION_JWT_PUBLIC_KEY must be a PEM public key' })
  SESSION_JWT_PUBLIC_KEY?: string;

  @Transform(emptyToUndefined) @IsOptional() @Matches(/^https?:\/\//, { message: 'SESSION_JWT_JWKS_URI must be an http(s) URL' })
  SESSION_JWT_JWKS_URI?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString() @MaxLength(2048)
  SESSION_JWT_ISSUER?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString() @MaxLength(2048)
  SESSION_JWT_AUDIENCE?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString() @MinLength(32, { message: 'API_KEY_SECRET must be at least 32 characters' })
  API_KEY_SECRET?: string;

  @Transform(toInt) @IsInt() @Min(0) @Max(1_000_000)
  AUTH_FAILURE_LIMIT = 30;

  /** The whole header section must arrive within this. */
  @Transform(toInt) @IsInt() @Min(100) @Max(600_000)
  HTTP_HEADERS_TIMEOUT_MS = 10_000;

  /** The whole request (headers and body) must arrive within this. */
  @Transform(toInt) @IsInt() @Min(100) @Max(600_000)
  HTTP_REQUEST_TIMEOUT_MS = 30_000;

  /** A socket with no traffic either way (a client that stops reading) is destroyed after this. */
  @Transform(toInt) @IsInt() @Min(100) @Max(3_600_000)
  HTTP_IDLE_TIMEOUT_MS = 30_000;

  /** An idle keep-alive connection is closed after this: keep it above the load balancer's idle timeout (ALB: 60 s). */
  @Transform(toInt) @IsInt() @Min(100) @Max(600_000)
  HTTP_KEEP_ALIVE_TIMEOUT_MS = 72_000;

  /** Open connections beyond this are dropped at accept; unset: 90% of the descriptor limit (at most limit − 256). */
  @Transform(emptyToUndefined) @Transform(toInt) @IsOptional() @IsInt() @Min(1) @Max(10_000_000)
  HTTP_MAX_CONNECTIONS?: number;

  /** Active keys a user may hold per org (mint beyond: 409). */
  @Transform(toInt) @IsInt() @Min(1) @Max(100_000)
  MAX_ACTIVE_KEYS_PER_USER_ORG = 100;

  /** Mints per user per minute, per instance (beyond: 429 with Retry-After); 0 turns it off. */
  @Transform(toInt) @IsInt() @Min(0) @Max(1_000_000)
  MINT_RATE_LIMIT = 30;

  /** Longest lifetime of a session JWT in seconds, counted from its `iat`. */
  @Transform(toInt) @IsInt() @Min(60) @Max(31_536_000)
  SESSION_MAX_AGE = 86_400;

  @Transform(emptyToUndefined) @IsOptional() @IsString()
  PLAN_LIMITS?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString()
  PLAN_LIMITS_FILE?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString()
  TRUST_PROXY?: string;

  /** Days an audit event is kept before the retention job prunes it; 0 keeps events forever. */
  @Transform(toInt) @IsInt() @Min(0) @Max(36500)
  AUDIT_RETENTION_DAYS = 400;

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /** Days of daily usage history kept (issue 16). */
  @Transform(toInt) @IsInt() @Min(1) @Max(3660)
  USAGE_RETENTION_DAYS = 400;

  /** off: charge transactions commit with synchronous_commit = off (see README, "Durability of charges"). */
  @Transform(toBool) @IsBoolean()
  USAGE_SYNCHRONOUS_COMMIT = true;

  /** json (one object per line) or pretty; unset: pretty when NODE_ENV=development, else json. */
  @Transform(emptyToUndefined) @IsOptional() @IsIn(['json', 'pretty'])
  LOG_FORMAT?: 'json' | 'pretty';

  /** Verification cache under leases (README, "Verification cache"; in-process on the embedded database); false: a database read per request. */
  @Transform(toBool) @IsBoolean()
  VERIFICATION_CACHE = true;

  /** How long an instance's cache lease lasts: the longest a revoke waits for an instance that stopped answering. */
  @Transform(toInt) @IsInt() @Min(300) @Max(60000)
  VERIFICATION_CACHE_LEASE_MS = 3000;

  @Transform(toInt) @IsInt() @Min(1) @Max(1_000_000)
  VERIFICATION_CACHE_MAX_ENTRIES = 10_000;

  /** When set, GET /metrics requires `Authorization: Bearer <METRICS_TOKEN>`. */
  @Transform(emptyToUndefined) @IsOptional() @IsString() @MinLength(16, { message: 'METRICS_TOKEN must be at least 16 characters' })
  METRICS_TOKEN?: string;

  /** How long a rendered /metrics is served again (ms); 0 renders every scrape. */
  @Transform(toInt) @IsInt() @Min(0) @Max(60_000)
  METRICS_CACHE_MS = 1_000;

  /**
   * Without METRICS_TOKEN, loopback clients (after the TRUST_PROXY rules) may scrape /metrics on the
   * API port. Unset: true outside production, false in production.
   */
  @Transform(toBool) @IsOptional() @IsBoolean({ message: 'METRICS_ALLOW_LOOPBACK must be true or false' })
  METRICS_ALLOW_LOOPBACK?: boolean;

  /** Address the METRICS_PORT listener binds to: loopback unless you say otherwise. */
  @IsString() @MinLength(1)
  METRICS_HOST = '127.0.0.1';
  // Events out (issue 17): webhooks, the job queue, leaked-key reports.

  /** Run the outbox relay, webhook deliveries and the expiry scan in this process. */
  @Transform(toBool) @IsBoolean()
  EVENTS_WORKER = true;

  /** How often idle workers and the relay look for work (a write on this instance wakes the relay at once). */
  @Transform(toInt) @IsInt() @Min(100) @Max(60_000)
  EVENTS_POLL_INTERVAL_MS = 1000;

  /** pg-boss's own pool (it never borrows the app's). */
  @Transform(toInt) @IsInt() @Min(1) @Max(50)
  EVENTS_QUEUE_POOL_MAX = 2;

  /** Retries after the first attempt (exponential backoff with jitter: about 20 hours with the defaults). */
  @Transform(toInt) @IsInt() @Min(0) @Max(100)
  WEBHOOK_RETRY_LIMIT = 18;

  @Transform(toInt) @IsInt() @Min(1) @Max(86_400)
  WEBHOOK_RETRY_DELAY_SECONDS = 15;

  @Transform(toInt) @IsInt() @Min(1) @Max(86_400)
  WEBHOOK_RETRY_DELAY_MAX_SECONDS = 7200;

  @Transform(toInt) @IsInt() @Min(100) @Max(60_000)
  WEBHOOK_TIMEOUT_MS = 10_000;

  /** Comma-separated CIDRs webhooks may reach although private or loopback (e.g. 127.0.0.1/32). */
  @Transform(emptyToUndefined) @IsOptional() @Matches(/^\s*[0-9a-fA-F:.]+(\/\d{1,3})?(\s*,\s*[0-9a-fA-F:.]+(\/\d{1,3})?)*\s*$/, { message: 'WEBHOOK_ALLOW_CIDRS must be a comma-separated list of addresses or CIDRs' })
  WEBHOOK_ALLOW_CIDRS?: string;

  /** Ports webhooks may reach, comma-separated ports or ranges (`443,8443,9000-9099`); default 443, plus 80 outside production. */
  @Transform(emptyToUndefined) @IsOptional() @Matches(/^\s*\d{1,5}(-\d{1,5})?(\s*,\s*\d{1,5}(-\d{1,5})?)*\s*$/, { message: 'WEBHOOK_ALLOWED_PORTS must be a comma-separated list of ports or ranges (e.g. 443,8000-8099)' })
  WEBHOOK_ALLOWED_PORTS?: string;

  /** Webhook endpoints an org may have (creating one more: 409). */
  @Transform(toInt) @IsInt() @Min(1) @Max(1000)
  WEBHOOK_MAX_ENDPOINTS_PER_ORG = 10;

  /** Test and retry requests an org may make per minute, per instance (beyond: 429 with Retry-After); 0 turns it off. */
  @Transform(toInt) @IsInt() @Min(0) @Max(100_000)
  WEBHOOK_SEND_RATE_LIMIT = 10;

  /** Delivery slots one org may hold at once on an instance (of its 4): a slow receiver cannot hold them all. */
  @Transform(toInt) @IsInt() @Min(1) @Max(4)
  WEBHOOK_ORG_CONCURRENCY = 2;

  /** Cron of the expiry scan (pg-boss schedule). */
  @IsString() @MinLength(9)
  EVENTS_EXPIRY_SCAN_CRON = '*/5 * * * *';

  /** GitHub secret scanning public keys: JSON list of {key_identifier, key}. */
  @Transform(emptyToUndefined) @IsOptional() @IsString()
  GITHUB_SECRET_SCANNING_KEYS?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString()
  GITHUB_SECRET_SCANNING_KEYS_FILE?: string;

  /** POST /credentials/revoke per client address per minute (0 = off). */
  @Transform(toInt) @IsInt() @Min(0) @Max(1_000_000)
  CREDENTIALS_REVOKE_LIMIT = 10;

  /** When set, /metrics is served on this port only (0: any free port), not on PORT. */
  @Transform(emptyToUndefined) @Transform(toInt) @IsOptional() @IsInt() @Min(0) @Max(65535)
  METRICS_PORT?: number;
}

export class ConfigError extends Error {}

/** `443,8000-8099` as inclusive ranges ([443, 443], [8000, 8099]); the shape is validated above. */
export function parsePortRanges(list: string): Array<[number, number]> {
  return list.split(',').map((entry) => {
    const [from, to = from] = entry.trim().split('-').map(Number);
    return [from, to];
  });
}

/** Typed configuration the app is built from. */
export interface AppConfig {
  env: EnvironmentVariables;
  production: boolean;
  embedded: boolean;
  dataDir: string;
  planLimits: PlanLimits;
  /** GitHub secret scanning keys (JSON text), from GITHUB_SECRET_SCANNING_KEYS or its _FILE; checked at start. */
  githubScanningKeys?: string;
}

/**
 * Validates the environment; throws a ConfigError whose message names every bad variable.
 * Never echoes values: some of them are secrets.
 */
export function loadEnvironment(source: NodeJS.ProcessEnv = process.env): EnvironmentVariables {
  const known = Object.keys(new EnvironmentVariables());
  const raw: Record<string, unknown> = {};
  for (const name of [...known, 'DATABASE_URL', 'DATABASE_MIGRATION_URL', 'SESSION_JWT_SECRET', 'SESSION_JWT_PUBLIC_KEY', 'SESSION_JWT_JWKS_URI',
    'SESSION_JWT_ISSUER', 'SESSION_JWT_AUDIENCE', 'API_KEY_SECRET', 'PLAN_LIMITS', 'PLAN_LIMITS_FILE', 'TRUST_PROXY', 'NODE_ENV',
    'WEBHOOK_ALLOW_CIDRS', 'WEBHOOK_ALLOWED_PORTS', 'GITHUB_SECRET_SCANNING_KEYS', 'GITHUB_SECRET_SCANNING_KEYS_FILE']) {
    if (source[name] !== undefined) raw[name] = source[name];
  }
  const env = plainToInstance(EnvironmentVariables, raw, { exposeDefaultValues: true });
  const errors = validateSync(env, { skipMissingProperties: false });
  const lines = errors.map((e) => `  ${e.property}: ${Object.values(e.constraints ?? {}).join('; ')}`);
  if (errors.length === 0 && env.DB_POOL_MIN > env.DB_POOL_MAX) lines.push(`  DB_POOL_MIN: must not exceed DB_POOL_MAX (${env.DB_POOL_MAX})`);
  if (errors.length === 0 && env.WEBHOOK_ALLOWED_PORTS && parsePortRanges(env.WEBHOOK_ALLOWED_PORTS).some(([from, to]) => from < 1 || to > 65535 || to < from)) {
    lines.push('  WEBHOOK_ALLOWED_PORTS: every port must be 1 to 65535, and a range low-high');
  }
  if (env.DATABASE_MIGRATION_URL && !env.DATABASE_URL) lines.push('  DATABASE_MIGRATION_URL: needs DATABASE_URL (the embedded database sets its roles up itself)');
  if (errors.length === 0) lines.push(...productionSessionProblems(env));
  if (lines.length > 0) {
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return env;
}

function parseJson(text: string, variable: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${variable}: not valid JSON (${(error as Error).message})`);
  }
}

function readConfigFile(path: string, variable: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`${variable}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}

export function buildAppConfig(env: EnvironmentVariables): AppConfig {
  let planLimits;
  try {
    if (env.PLAN_LIMITS && env.PLAN_LIMITS_FILE) throw new Error('set PLAN_LIMITS or PLAN_LIMITS_FILE, not both');
    if (env.PLAN_LIMITS) planLimits = parsePlanLimits(parseJson(env.PLAN_LIMITS, 'PLAN_LIMITS'), 'PLAN_LIMITS');
    else if (env.PLAN_LIMITS_FILE) planLimits = parsePlanLimits(parseJson(readConfigFile(env.PLAN_LIMITS_FILE, 'PLAN_LIMITS_FILE'), 'PLAN_LIMITS_FILE'), 'PLAN_LIMITS_FILE');
    else planLimits = parsePlanLimits({});
  } catch (error) {
    throw new ConfigError(`Invalid configuration:\n  ${(error as Error).message}`);
  }
  let githubScanningKeys: string | undefined;
  try {
    if (env.GITHUB_SECRET_SCANNING_KEYS && env.GITHUB_SECRET_SCANNING_KEYS_FILE) throw new Error('set GITHUB_SECRET_SCANNING_KEYS or GITHUB_SECRET_SCANNING_KEYS_FILE, not both');
    githubScanningKeys = env.GITHUB_SECRET_SCANNING_KEYS ??
      (env.GITHUB_SECRET_SCANNING_KEYS_FILE ? readConfigFile(env.GITHUB_SECRET_SCANNING_KEYS_FILE, 'GITHUB_SECRET_SCANNING_KEYS_FILE') : undefined);
    if (githubScanningKeys) parseJson(githubScanningKeys, 'GITHUB_SECRET_SCANNING_KEYS');
  } catch (error) {
    throw new ConfigError(`Invalid configuration:\n  ${(error as Error).message}`);
  }
  return {
    env,
    githubScanningKeys,
    production: env.NODE_ENV === 'production',
    embedded: !env.DATABASE_URL,
    dataDir: resolve(env.DATA_DIR),
    planLimits,
  };
}

/** The library module's options, as the standalone server and the CLI both build them from the environment. */
export function moduleOptionsFrom(config: AppConfig): KeysUsageIdentityOptions {
  const env = config.env;
  return {
    apiKeySecret: env.API_KEY_SECRET ?? null,
    session: {
      secret: env.SESSION_JWT_SECRET,
      publicKey: env.SESSION_JWT_PUBLIC_KEY,
      jwksUri: env.SESSION_JWT_JWKS_URI,
      issuer: env.SESSION_JWT_ISSUER,
      audience: env.SESSION_JWT_AUDIENCE,
    },
    planLimits: config.planLimits,
    authFailureLimit: env.AUTH_FAILURE_LIMIT,
    auditRetentionDays: env.AUDIT_RETENTION_DAYS,
    // On the embedded database the cache needs no lease (one process; see VerificationLease).
    verificationCache: {
      enabled: env.VERIFICATION_CACHE,
      leaseMs: env.VERIFICATION_CACHE_LEASE_MS,
      maxEntries: env.VERIFICATION_CACHE_MAX_ENTRIES,
    },
    maxActiveKeysPerUserOrg: env.MAX_ACTIVE_KEYS_PER_USER_ORG,
    mintRatePerMinute: env.MINT_RATE_LIMIT,
    sessionMaxAgeSeconds: env.SESSION_MAX_AGE,
    usage: { retentionDays: env.USAGE_RETENTION_DAYS, synchronousCommit: env.USAGE_SYNCHRONOUS_COMMIT },
  };
}
