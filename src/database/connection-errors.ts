/**
 * Which failures to connect to PostgreSQL can heal by waiting, and which cannot.
 * A wrong password, a missing database, a host that does not resolve or a malformed URL stay
 * wrong however long we wait: the process says so in one line and exits. A refused connection,
 * a timeout or a server that is still starting up may be gone in a moment: those are retried.
 */

/** SQLSTATEs and system error codes that no amount of waiting fixes, with what they mean to an operator. */
const PERMANENT: Record<string, string> = {
  '28P01': 'authentication failed (wrong user name or password)',
  '28000': 'the server refused this user (pg_hba.conf or role)',
  '3D000': 'the database does not exist',
  ENOTFOUND: 'the host name does not resolve',
  ERR_INVALID_URL: 'DATABASE_URL is not a valid URL',
};

const POOLER_HINT =
  '(DATABASE_URL goes through a connection pooler in transaction mode: set DATABASE_DIRECT_URL to a session-mode ' +
  'connection beside it, and the service sends no startup parameter there; docs/operations.md, "High availability")';

/** System error codes of a network that may come back: refused, reset, unreachable, timed out, DNS temporarily failing. */
const TRANSIENT_SYSTEM = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'EPIPE',
]);

/** SQLSTATEs of a server that is there but not ready: starting up (57P03), shutting down, too many connections. */
const TRANSIENT_SQLSTATE = new Set(['57P01', '57P02', '57P03', '53300']);

/** Messages of the pg driver's connect timeouts, which carry no code. */
const TIMEOUT_MESSAGE =
  /timeout expired|connection timeout|timeout exceeded when trying to connect|Connection terminated unexpectedly/i;

export type ConnectionFailureKind = 'transient' | 'permanent';

export interface ConnectionFailure {
  kind: ConnectionFailureKind;
  /** A code to show: the SQLSTATE or system code, or `timeout`. */
  code: string;
  /** One line for an operator; never contains the password. */
  reason: string;
}

function codeOf(error: unknown): string | undefined {
  if (!error || typeof error !== 'object') return undefined;
  const e = error as { code?: unknown; driverError?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string') return e.code;
  if (e.driverError) return codeOf(e.driverError);
  // Node's AggregateError (a host with several addresses, all refused) keeps the codes inside.
  if (Array.isArray(e.errors)) return e.errors.map(codeOf).find(Boolean);
  if (e.cause) return codeOf(e.cause);
  return undefined;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Classifies a failure to connect. Anything not known to heal is permanent: failing fast beats waiting on a mistake. */
export function classifyConnectionError(error: unknown): ConnectionFailure {
  const code = codeOf(error);
  const message = oneLine(error instanceof Error ? error.message : String(error));
  // PgBouncer (transaction mode) refusing the timeouts sent at connect: waiting will not change it.
  if (/unsupported startup parameter/i.test(message))
    return { kind: 'permanent', code: code ?? '08P01', reason: `${message} ${POOLER_HINT}` };
  if (code && PERMANENT[code]) return { kind: 'permanent', code, reason: `${PERMANENT[code]}: ${message}` };
  if (code && (TRANSIENT_SYSTEM.has(code) || TRANSIENT_SQLSTATE.has(code) || code.startsWith('08'))) {
    return { kind: 'transient', code, reason: message || code };
  }
  if (TIMEOUT_MESSAGE.test(message)) return { kind: 'transient', code: 'timeout', reason: message };
  return { kind: 'permanent', code: code ?? 'error', reason: message };
}

/** The database's address for a message: user, host, port and database, never the password. */
export function describeDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.username ? `${decodeURIComponent(u.username)}@` : ''}${u.host}${u.pathname}`;
  } catch {
    return '(unparseable DATABASE_URL)';
  }
}

/** A start-up failure with a one-line message that main and the CLI print as they are. */
export class DatabaseStartupError extends Error {
  constructor(
    message: string,
    readonly failure: ConnectionFailure,
  ) {
    super(message);
    this.name = 'DatabaseStartupError';
  }
}

/** Malformed URLs are refused before any connection (pg would throw a bare TypeError deep inside). */
export function assertDatabaseUrl(url: string, variable = 'DATABASE_URL'): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new DatabaseStartupError(`Cannot use ${variable}: it is not a valid URL (not retried)`, {
      kind: 'permanent',
      code: 'ERR_INVALID_URL',
      reason: PERMANENT.ERR_INVALID_URL,
    });
  }
  if (!/^postgres(ql)?:$/.test(parsed.protocol) || !parsed.hostname) {
    throw new DatabaseStartupError(
      `Cannot use ${variable}: expected postgres://user:password@host:port/database (not retried)`,
      {
        kind: 'permanent',
        code: 'ERR_INVALID_URL',
        reason: PERMANENT.ERR_INVALID_URL,
      },
    );
  }
}

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number;
  /** Delay before the second attempt; doubles each time up to maxDelayMs. */
  firstDelayMs: number;
  maxDelayMs: number;
  /** Told about each retry, with the delay: the operator sees what the process is waiting for. */
  onRetry: (message: string) => void;
  sleep?: (ms: number) => Promise<void>;
}

/** Server: about half a minute of patience for a database that is starting beside it (compose, Kubernetes). */
export const SERVER_RETRY = { attempts: 8, firstDelayMs: 500, maxDelayMs: 8_000 } as const;
/** CLI: an operator at a terminal wants an answer, not a minute of silence. */
export const CLI_RETRY = { attempts: 3, firstDelayMs: 500, maxDelayMs: 1_000 } as const;

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs `connect` until it succeeds, retrying only transient failures with a growing delay.
 * A permanent failure, or the last transient one, becomes a DatabaseStartupError with one line.
 */
export async function connectWithRetry<T>(target: string, connect: () => Promise<T>, policy: RetryPolicy): Promise<T> {
  const sleep = policy.sleep ?? defaultSleep;
  let delay = policy.firstDelayMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await connect();
    } catch (error) {
      if (error instanceof DatabaseStartupError) throw error;
      const failure = classifyConnectionError(error);
      if (failure.kind === 'permanent') {
        throw new DatabaseStartupError(
          `Cannot connect to the database at ${target}: ${failure.reason} [${failure.code}] (not retried: check DATABASE_URL)`,
          failure,
        );
      }
      if (attempt >= policy.attempts) {
        throw new DatabaseStartupError(
          `Cannot connect to the database at ${target}: ${failure.reason} [${failure.code}] (gave up after ${attempt} attempts)`,
          failure,
        );
      }
      policy.onRetry(
        `Database at ${target} not reachable: ${failure.reason} [${failure.code}]; retrying in ${delay} ms (attempt ${attempt + 1} of ${policy.attempts})`,
      );
      await sleep(delay);
      delay = Math.min(delay * 2, policy.maxDelayMs);
    }
  }
}
