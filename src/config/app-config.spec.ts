import { describe, expect, it } from 'vitest';
import { postgresOptions } from '../database/data-source-options.js';
import { buildAppConfig, ConfigError, loadEnvironment, moduleOptionsFrom } from './app-config.js';

describe('configuration', () => {
  it('applies the documented defaults to an empty environment', () => {
    const config = buildAppConfig(loadEnvironment({}));
    expect(config.env.PORT).toBe(3000);
    expect(config.env.DB_MIGRATE).toBe(true);
    expect(config.env.AUTH_FAILURE_LIMIT).toBe(30);
    expect(config.embedded).toBe(true);
    expect(config.production).toBe(false);
    expect(config.planLimits).toEqual({
      free: { wallet: 100, imports: 10, captures: 100 },
      pro: { wallet: null, imports: 1000, captures: 10000 },
    });
  });

  it('reads typed values from strings', () => {
    const env = loadEnvironment({ PORT: '8080', DB_MIGRATE: 'false', AUTH_FAILURE_LIMIT: '5', NODE_ENV: 'production' });
    expect(env).toMatchObject({ PORT: 8080, DB_MIGRATE: false, AUTH_FAILURE_LIMIT: 5, NODE_ENV: 'production' });
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['DB_MIGRATE', 'maybe'],
    ['NODE_ENV', 'staging'],
    ['DATABASE_URL', 'mysql://x'],
    ['SESSION_JWT_SECRET', 'short'],
    ['API_KEY_SECRET', 'short'],
    ['AUTH_FAILURE_LIMIT', '-1'],
    ['AUDIT_RETENTION_DAYS', '7'],
    ['LOG_LEVEL', 'loud'],
    ['SESSION_JWT_PUBLIC_KEY', 'not a pem'],
    ['VERIFICATION_CACHE', 'sometimes'],
    ['VERIFICATION_CACHE_LEASE_MS', '100'],
    ['VERIFICATION_CACHE_MAX_ENTRIES', '0'],
    ['USAGE_RETENTION_DAYS', '0'],
    ['USAGE_RETENTION_DAYS', 'forever'],
    ['USAGE_SYNCHRONOUS_COMMIT', 'sometimes'],
    ['USAGE_CHARGING', 'lazy'],
    ['DB_POOL_MIN', '-1'],
  ])('refuses %s=%s with a message that names the variable and not its value', (name, value) => {
    let error: unknown;
    try {
      loadEnvironment({ [name]: value });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(name);
    if (name.includes('SECRET')) expect((error as Error).message).not.toContain(value);
  });

  describe('in production, sessions verified with a public key or JWKS', () => {
    const PEM = '-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----';
    const JWKS = 'https://idp.example.com/.well-known/jwks.json';
    const named = { SESSION_JWT_AUDIENCE: 'kui-api', SESSION_JWT_ISSUER: 'https://idp.example.com/' };
    const problems = (env: Record<string, string>) => {
      try {
        loadEnvironment({ NODE_ENV: 'production', ...env });
        return '';
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
    };

    it.each([
      ['SESSION_JWT_PUBLIC_KEY', PEM],
      ['SESSION_JWT_JWKS_URI', JWKS],
    ])('with %s, refuses to start without SESSION_JWT_AUDIENCE and SESSION_JWT_ISSUER, naming each', (name, value) => {
      expect(problems({ [name]: value })).toMatch(
        /SESSION_JWT_AUDIENCE: required in production[\s\S]*SESSION_JWT_ISSUER: required in production/,
      );
      expect(problems({ [name]: value, SESSION_JWT_AUDIENCE: 'kui-api' })).not.toContain('SESSION_JWT_AUDIENCE');
      expect(problems({ [name]: value, SESSION_JWT_AUDIENCE: 'kui-api' })).toContain('SESSION_JWT_ISSUER');
      expect(problems({ [name]: value, ...named })).toBe('');
    });

    it('refuses a JWKS URL that is not https', () => {
      expect(problems({ SESSION_JWT_JWKS_URI: 'http://idp.example.com/jwks.json', ...named })).toContain(
        'SESSION_JWT_JWKS_URI: must be an https:// URL in production',
      );
    });

    it('asks nothing more of an HS256 secret, nor outside production', () => {
      expect(problems({ SESSION_JWT_SECRET: 'x'.repeat(48) })).toBe('');
      expect(() =>
        loadEnvironment({ NODE_ENV: 'development', SESSION_JWT_JWKS_URI: 'http://127.0.0.1:9/jwks.json' }),
      ).not.toThrow();
    });
  });

  it('keeps DB_POOL_MIN (default 2) connections open, and refuses more than DB_POOL_MAX', () => {
    expect(loadEnvironment({}).DB_POOL_MIN).toBe(2);
    expect(loadEnvironment({ DB_POOL_MIN: '4', DB_POOL_MAX: '4' }).DB_POOL_MIN).toBe(4);
    expect(() => loadEnvironment({ DB_POOL_MIN: '5', DB_POOL_MAX: '4' })).toThrow(
      /DB_POOL_MIN: must not exceed DB_POOL_MAX \(4\)/,
    );
    const url = 'postgres://u@localhost/db';
    const options = postgresOptions(buildAppConfig(loadEnvironment({ DATABASE_URL: url, DB_POOL_MIN: '3' })), url) as {
      extra: { min: number };
    };
    expect(options.extra.min).toBe(3);
  });

  describe('DATABASE_DIRECT_URL (beside a transaction pooler on DATABASE_URL)', () => {
    const pooled = 'postgres://u@pgbouncer:6432/db';
    const direct = 'postgres://u@primary:5432/db';

    it('refuses one that is not a postgres URL, naming the variable', () => {
      expect(() => loadEnvironment({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: 'mysql://u@h/db' })).toThrow(
        /DATABASE_DIRECT_URL must be a postgres:\/\/ or postgresql:\/\/ URL/,
      );
      expect(() => loadEnvironment({ DATABASE_DIRECT_URL: direct })).toThrow(/DATABASE_DIRECT_URL: needs DATABASE_URL/);
    });

    it('without it nothing changes: named statements, timeouts as startup parameters', () => {
      const config = buildAppConfig(loadEnvironment({ DATABASE_URL: direct }));
      expect(moduleOptionsFrom(config).database).toMatchObject({ namedStatements: true, directUrl: undefined });
      expect(moduleOptionsFrom(config).database?.transactionStatementTimeoutMs).toBeUndefined();
      const extra = (postgresOptions(config, direct) as { extra: Record<string, unknown> }).extra;
      expect(extra).toMatchObject({ statement_timeout: 4000, idle_in_transaction_session_timeout: 10_000 });
    });

    it('with it: no startup parameter on the pooled URL, the timeout per transaction, no named statements', () => {
      const config = buildAppConfig(loadEnvironment({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: direct }));
      expect(moduleOptionsFrom(config).database).toEqual({
        directUrl: direct,
        namedStatements: false,
        transactionStatementTimeoutMs: 4000,
        idleInTransactionMs: 10_000,
      });
      const extra = (postgresOptions(config, pooled, undefined, true) as { extra: Record<string, unknown> }).extra;
      expect(extra).not.toHaveProperty('statement_timeout');
      expect(extra).not.toHaveProperty('idle_in_transaction_session_timeout');
      expect(extra.query_timeout).toBe(5000); // the client-side bound stays
      const named = buildAppConfig(
        loadEnvironment({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: direct, DB_NAMED_STATEMENTS: 'true' }),
      );
      expect(moduleOptionsFrom(named).database?.namedStatements).toBe(true);
    });
  });

  it('passes the usage settings to the module: retention 400 days, synchronous commits and leased charging by default', () => {
    expect(moduleOptionsFrom(buildAppConfig(loadEnvironment({}))).usage).toEqual({
      retentionDays: 400,
      synchronousCommit: true,
      charging: 'leased',
    });
    const set = moduleOptionsFrom(
      buildAppConfig(
        loadEnvironment({ USAGE_RETENTION_DAYS: '30', USAGE_SYNCHRONOUS_COMMIT: 'off', USAGE_CHARGING: 'exact' }),
      ),
    );
    expect(set.usage).toEqual({ retentionDays: 30, synchronousCommit: false, charging: 'exact' });
  });

  it('reads plan limits from PLAN_LIMITS, keeping defaults for what it does not name', () => {
    const config = buildAppConfig(loadEnvironment({ PLAN_LIMITS: '{"free":{"wallet":5},"pro":{"imports":null}}' }));
    expect(config.planLimits.free).toEqual({ wallet: 5, imports: 10, captures: 100 });
    expect(config.planLimits.pro).toEqual({ wallet: null, imports: null, captures: 10000 });
  });

  it.each([
    ['not json', /PLAN_LIMITS: not valid JSON/],
    ['{"gold":{}}', /unknown plan "gold"/],
    ['{"free":{"wallet":-1}}', /PLAN_LIMITS\.free\.wallet must be an integer from 0 to 2147483647, or null/],
    ['{"free":{"asks":1}}', /unknown meter "asks"/],
    ['[1]', /PLAN_LIMITS must be a JSON object/],
  ])('refuses PLAN_LIMITS=%s', (value, message) => {
    expect(() => buildAppConfig(loadEnvironment({ PLAN_LIMITS: value }))).toThrow(message);
  });

  it('turns the verification cache on with PostgreSQL, off on request and always off with the embedded database', () => {
    const pg = { DATABASE_URL: 'postgres://x@127.0.0.1/db' };
    expect(moduleOptionsFrom(buildAppConfig(loadEnvironment(pg))).verificationCache).toEqual({
      enabled: true,
      leaseMs: 3000,
      maxEntries: 10_000,
    });
    expect(
      moduleOptionsFrom(buildAppConfig(loadEnvironment({ ...pg, VERIFICATION_CACHE: 'false' }))).verificationCache
        ?.enabled,
    ).toBe(false);
    expect(moduleOptionsFrom(buildAppConfig(loadEnvironment({}))).verificationCache?.enabled).toBe(true);
    expect(
      moduleOptionsFrom(buildAppConfig(loadEnvironment({ VERIFICATION_CACHE: 'false' }))).verificationCache?.enabled,
    ).toBe(false);
    expect(
      moduleOptionsFrom(buildAppConfig(loadEnvironment({ ...pg, VERIFICATION_CACHE_LEASE_MS: '1500' })))
        .verificationCache?.leaseMs,
    ).toBe(1500);
  });
});
