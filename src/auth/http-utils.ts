export { setResponseHeader } from '../common/too-many-requests.js';

const BEARER = /^Bearer[ ]+(\S+)\s*$/i;
/** The last header value parsed and its token: the guard and both strategies ask for it in one request. */
let lastValue: string | null = null;
let lastToken: string | null = null;

/** The bearer token of a request, or null. */
export function bearerToken(headers: Record<string, unknown>): string | null {
  const value = headers['authorization'];
  if (typeof value !== 'string') return null;
  if (value === lastValue) return lastToken;
  const match = BEARER.exec(value);
  lastValue = value;
  lastToken = match ? match[1] : null;
  return lastToken;
}

const DB_DOWN_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EPIPE',
  '57P01',
  '57P02',
  '57P03',
  '57014',
  '53300',
  // A read-only transaction: the server answering is (now) a standby, as just after a switchover
  // before the router moved; the primary is elsewhere or on its way.
  '25006',
  // Out of descriptors (a connection flood): the database cannot be reached now; a 503, not a 500.
  'EMFILE',
  'ENFILE',
]);

/** True for errors that mean "the database cannot answer now" (outage, timeout, overload), as opposed to bugs. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false;
  const e = error as { code?: string; message?: string; driverError?: unknown };
  if (e.driverError && isDatabaseUnavailable(e.driverError)) return true;
  if (e.code && (DB_DOWN_CODES.has(e.code) || e.code.startsWith('08'))) return true;
  const m = e.message ?? '';
  return /Connection terminated|timeout exceeded when trying to connect|timeout expired|Query read timeout|connect ECONNREFUSED|Connection ended unexpectedly|Client has encountered a connection error/i.test(
    m,
  );
}
