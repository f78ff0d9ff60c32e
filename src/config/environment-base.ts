import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength } from 'class-validator';
import { toInt, toBool, emptyToUndefined } from './env-transforms.js';

/** Server, database, credentials, HTTP limits and key caps: the first half of the environment (see environment-variables.ts). */
export class BaseEnvironment {
  @IsOptional()
  @IsIn(['development', 'production', 'test'])
  NODE_ENV: 'development' | 'production' | 'test' = 'development';

  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  @IsString()
  @MinLength(1)
  HOST = '0.0.0.0';

  @Transform(emptyToUndefined)
  @IsOptional()
  @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_URL must be a postgres:// or postgresql:// URL' })
  DATABASE_URL?: string;

  /**
   * The schema owner's connection, for migrations only (and the grants to DATABASE_URL's role
   * that follow them). Unset: migrations run through DATABASE_URL, whose role then owns the schema.
   */
  @Transform(emptyToUndefined)
  @IsOptional()
  @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_MIGRATION_URL must be a postgres:// or postgresql:// URL' })
  DATABASE_MIGRATION_URL?: string;

  /**
   * A session-mode connection (PostgreSQL itself, or a pooler in session mode) beside DATABASE_URL,
   * for what needs a session: the verification cache's LISTEN connection and its acknowledgements,
   * the migrations' advisory lock (DATABASE_MIGRATION_URL still wins for migrations). When set,
   * DATABASE_URL may go through a transaction pooler (docs/operations.md, "High availability").
   */
  @Transform(emptyToUndefined)
  @IsOptional()
  @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_DIRECT_URL must be a postgres:// or postgresql:// URL' })
  DATABASE_DIRECT_URL?: string;

  /**
   * Named (server-side prepared) statements on DATABASE_URL's connections. Unset: on without
   * DATABASE_DIRECT_URL, off with it (PgBouncer before 1.21, or without max_prepared_statements,
   * loses them in transaction mode). Set true behind a pooler that keeps them (PgBouncer >= 1.21
   * with max_prepared_statements > 0, RDS Proxy and Supavisor pin or refuse: see docs/operations.md).
   */
  @Transform(toBool)
  @IsOptional()
  @IsBoolean({ message: 'DB_NAMED_STATEMENTS must be true or false' })
  DB_NAMED_STATEMENTS?: boolean;

  @IsString()
  @MinLength(1)
  DATA_DIR = './.data';

  @Transform(toBool)
  @IsBoolean()
  DB_MIGRATE = true;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(200)
  DB_POOL_MAX = 10;

  /** Connections kept open however idle (at most DB_POOL_MAX): the first statement after a quiet spell does not pay a connect. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(200)
  DB_POOL_MIN = 2;

  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(60000)
  DB_CONNECT_TIMEOUT_MS = 3000;

  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600000)
  DB_STATEMENT_TIMEOUT_MS = 4000;

  /**
   * How long a request waits for a free pooled connection. A burst that finds every connection
   * busy queues for one; only past this wait is it refused (503). Opening a connection is bounded
   * by DB_CONNECT_TIMEOUT_MS alone.
   */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600000)
  DB_POOL_ACQUIRE_TIMEOUT_MS = 10000;

  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  @MinLength(32, { message: 'SESSION_JWT_SECRET must be at least 32 characters' })
  SESSION_JWT_SECRET?: string;

  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  @Matches(/-----BEGIN PUBLIC KEY-----/, { message: 'SESSION_JWT_PUBLIC_KEY must be a PEM public key' })
  SESSION_JWT_PUBLIC_KEY?: string;

  @Transform(emptyToUndefined)
  @IsOptional()
  @Matches(/^https?:\/\//, { message: 'SESSION_JWT_JWKS_URI must be an http(s) URL' })
  SESSION_JWT_JWKS_URI?: string;

  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  SESSION_JWT_ISSUER?: string;

  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  SESSION_JWT_AUDIENCE?: string;

  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  @MinLength(32, { message: 'API_KEY_SECRET must be at least 32 characters' })
  API_KEY_SECRET?: string;

  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(1_000_000)
  AUTH_FAILURE_LIMIT = 30;

  /** The whole header section must arrive within this. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  HTTP_HEADERS_TIMEOUT_MS = 10_000;

  /** The whole request (headers and body) must arrive within this. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  HTTP_REQUEST_TIMEOUT_MS = 30_000;

  /** A socket with no traffic either way (a client that stops reading) is destroyed after this. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  HTTP_IDLE_TIMEOUT_MS = 30_000;

  /** An idle keep-alive connection is closed after this: keep it above the load balancer's idle timeout (ALB: 60 s). */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  HTTP_KEEP_ALIVE_TIMEOUT_MS = 72_000;

  /** Open connections beyond this are dropped at accept; unset: 90% of the descriptor limit (at most limit − 256). */
  @Transform(emptyToUndefined)
  @Transform(toInt)
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(10_000_000)
  HTTP_MAX_CONNECTIONS?: number;

  /** Active keys a user may hold per org (mint beyond: 409). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100_000)
  MAX_ACTIVE_KEYS_PER_USER_ORG = 100;

  /** Mints per user per minute, per instance (beyond: 429 with Retry-After); 0 turns it off. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(1_000_000)
  MINT_RATE_LIMIT = 30;

  /** Longest lifetime of a session JWT in seconds, counted from its `iat`. */
  @Transform(toInt)
  @IsInt()
  @Min(60)
  @Max(31_536_000)
  SESSION_MAX_AGE = 86_400;
}
