import { parseJson, readConfigFile, readJsonSetting } from './config-files.js';
import { resolve } from 'node:path';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { parsePlanLimits, type PlanLimits } from '../common/plan-limits.js';
import { parsePlanRateLimits, type PlanRateLimits } from '../common/plan-rate-limits.js';
import type { ScopeRegistryInput } from '../common/scope-registry.js';
import { scopeRegistryFromEnv } from './scopes-env.js';
import { meterRegistryFromEnv } from './meters-env.js';
import { parseMeterRegistry, type MeterRegistryInput } from '../common/meter-registry.js';
import type { KeysUsageIdentityOptions } from '../settings/keys-usage-identity.options.js';
import { productionSessionProblems } from './session-requirements.js';
import { EnvironmentVariables } from './environment-variables.js';

export { EnvironmentVariables };

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
  planRateLimits: PlanRateLimits;
  /** The scope registry from API_KEY_SCOPES or its _FILE (checked here); undefined: the contract's two. */
  scopes?: ScopeRegistryInput;
  /** The deployment's own meters from USAGE_METERS or its _FILE (checked here); undefined: the contract's four only. */
  meters?: MeterRegistryInput;
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
  for (const name of [
    ...known,
    'DATABASE_URL',
    'DATABASE_MIGRATION_URL',
    'DATABASE_DIRECT_URL',
    'DB_NAMED_STATEMENTS',
    'SESSION_JWT_SECRET',
    'SESSION_JWT_PUBLIC_KEY',
    'SESSION_JWT_JWKS_URI',
    'SESSION_JWT_ISSUER',
    'SESSION_JWT_AUDIENCE',
    'API_KEY_SECRET',
    'PLAN_LIMITS',
    'PLAN_LIMITS_FILE',
    'PLAN_RATE_LIMITS',
    'API_KEY_SCOPES',
    'API_KEY_SCOPES_FILE',
    'USAGE_METERS',
    'USAGE_METERS_FILE',
    'TRUST_PROXY',
    'NODE_ENV',
    'WEBHOOK_ALLOW_CIDRS',
    'WEBHOOK_ALLOWED_PORTS',
    'GITHUB_SECRET_SCANNING_KEYS',
    'GITHUB_SECRET_SCANNING_KEYS_FILE',
    'ADMIN_API_TOKEN',
  ]) {
    if (source[name] !== undefined) raw[name] = source[name];
  }
  const env = plainToInstance(EnvironmentVariables, raw, { exposeDefaultValues: true });
  const errors = validateSync(env, { skipMissingProperties: false });
  const lines = errors.map((e) => `  ${e.property}: ${Object.values(e.constraints ?? {}).join('; ')}`);
  if (errors.length === 0 && env.DB_POOL_MIN > env.DB_POOL_MAX)
    lines.push(`  DB_POOL_MIN: must not exceed DB_POOL_MAX (${env.DB_POOL_MAX})`);
  if (
    errors.length === 0 &&
    env.WEBHOOK_ALLOWED_PORTS &&
    parsePortRanges(env.WEBHOOK_ALLOWED_PORTS).some(([from, to]) => from < 1 || to > 65535 || to < from)
  ) {
    lines.push('  WEBHOOK_ALLOWED_PORTS: every port must be 1 to 65535, and a range low-high');
  }
  // The database's prune function never deletes an event younger than 30 days (see SECURITY.md).
  if (errors.length === 0 && env.AUDIT_RETENTION_DAYS > 0 && env.AUDIT_RETENTION_DAYS < 30)
    lines.push('  AUDIT_RETENTION_DAYS: must be 0 (keep forever) or at least 30');
  if (env.DATABASE_MIGRATION_URL && !env.DATABASE_URL)
    lines.push('  DATABASE_MIGRATION_URL: needs DATABASE_URL (the embedded database sets its roles up itself)');
  if (env.DATABASE_DIRECT_URL && !env.DATABASE_URL)
    lines.push('  DATABASE_DIRECT_URL: needs DATABASE_URL (the embedded database has no pooler to go around)');
  if (errors.length === 0) lines.push(...productionSessionProblems(env));
  if (lines.length > 0) {
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return env;
}

export function buildAppConfig(env: EnvironmentVariables): AppConfig {
  let planLimits;
  let planRateLimits;
  let meters: MeterRegistryInput | undefined;
  try {
    // The meters first: PLAN_LIMITS may name the deployment's own, and only those.
    meters = meterRegistryFromEnv(env);
    const deploymentMeters = [...parseMeterRegistry(meters, 'USAGE_METERS').keys()];
    const limits = readJsonSetting(env, 'PLAN_LIMITS');
    planLimits = limits
      ? parsePlanLimits(limits.value, limits.variable, deploymentMeters)
      : parsePlanLimits({}, 'PLAN_LIMITS', deploymentMeters);
    planRateLimits = parsePlanRateLimits(
      env.PLAN_RATE_LIMITS ? parseJson(env.PLAN_RATE_LIMITS, 'PLAN_RATE_LIMITS') : {},
    );
  } catch (error) {
    throw new ConfigError(`Invalid configuration:\n  ${(error as Error).message}`);
  }
  let scopes: ScopeRegistryInput | undefined;
  try {
    scopes = scopeRegistryFromEnv(env);
  } catch (error) {
    throw new ConfigError(`Invalid configuration:\n  ${(error as Error).message}`);
  }
  let githubScanningKeys: string | undefined;
  try {
    if (env.GITHUB_SECRET_SCANNING_KEYS && env.GITHUB_SECRET_SCANNING_KEYS_FILE)
      throw new Error('set GITHUB_SECRET_SCANNING_KEYS or GITHUB_SECRET_SCANNING_KEYS_FILE, not both');
    githubScanningKeys =
      env.GITHUB_SECRET_SCANNING_KEYS ??
      (env.GITHUB_SECRET_SCANNING_KEYS_FILE
        ? readConfigFile(env.GITHUB_SECRET_SCANNING_KEYS_FILE, 'GITHUB_SECRET_SCANNING_KEYS_FILE')
        : undefined);
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
    planRateLimits,
    scopes,
    meters,
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
    scopes: config.scopes,
    meters: config.meters,
    planRateLimits: config.planRateLimits,
    authFailureLimit: env.AUTH_FAILURE_LIMIT,
    auditRetentionDays: env.AUDIT_RETENTION_DAYS,
    // On the embedded database the cache needs no lease (one process; see CoherenceLease).
    verificationCache: {
      enabled: env.VERIFICATION_CACHE,
      leaseMs: env.VERIFICATION_CACHE_LEASE_MS,
      maxEntries: env.VERIFICATION_CACHE_MAX_ENTRIES,
    },
    maxActiveKeysPerUserOrg: env.MAX_ACTIVE_KEYS_PER_USER_ORG,
    maxActiveServiceKeysPerOrg: env.MAX_ACTIVE_SERVICE_KEYS_PER_ORG,
    mintRatePerMinute: env.MINT_RATE_LIMIT,
    sessionMaxAgeSeconds: env.SESSION_MAX_AGE,
    usage: {
      retentionDays: env.USAGE_RETENTION_DAYS,
      synchronousCommit: env.USAGE_SYNCHRONOUS_COMMIT,
      charging: env.USAGE_CHARGING,
    },
    database: databaseOptionsFrom(env),
  };
}

/** A transaction left idle this long is ended by the server (a client that stopped half-way must not hold locks). */
export const IDLE_IN_TRANSACTION_MS = 10_000;

/**
 * With DATABASE_DIRECT_URL, DATABASE_URL may go through a transaction pooler: no startup
 * parameters there (see postgresOptions), so the statement timeout travels with each transaction
 * instead, and named statements are off unless DB_NAMED_STATEMENTS says the pooler keeps them.
 */
export function databaseOptionsFrom(env: EnvironmentVariables): KeysUsageIdentityOptions['database'] {
  if (!env.DATABASE_URL) return undefined;
  const direct = env.DATABASE_DIRECT_URL;
  return {
    directUrl: direct,
    namedStatements: env.DB_NAMED_STATEMENTS ?? !direct,
    transactionStatementTimeoutMs: direct ? env.DB_STATEMENT_TIMEOUT_MS : undefined,
    idleInTransactionMs: IDLE_IN_TRANSACTION_MS,
  };
}
