/** How the client retries an answer of 429 or 503. */
export interface RetryOptions {
  /** Retries after the first attempt (default 3; 0 turns retrying off). */
  maxRetries?: number;
  /** The longest single wait, in ms (default 30 000). An answer asking for more is returned as it is, not retried. */
  maxWaitMs?: number;
  /** Called before each wait (for logging or metrics). */
  onRetry?: (retry: RetryEvent) => void;
}

export interface RetryEvent {
  /** 1 for the first retry. */
  attempt: number;
  status: number;
  method: string;
  url: string;
  /** How long the client waits before the retry: the answer's Retry-After, else exponential backoff. */
  waitMs: number;
}

export const RETRIED_STATUSES: ReadonlySet<number> = new Set([429, 503]);
/**
 * A 429 is a refusal before anything is done: any request may be sent again. A 503 may mean
 * "outcome unknown" (the database link broke after the statement was sent): only a request that
 * is safe to repeat (RFC 9110 idempotent methods) is sent again; a mint or rotate is not.
 */
const RETRIED_AFTER_503: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

function retried(status: number, method: string): boolean {
  return status === 429 || (status === 503 && RETRIED_AFTER_503.has(method));
}
const DEFAULT_MAX_RETRIES = 3;
const DEFAULT_MAX_WAIT_MS = 30_000;
/** Without Retry-After: 0.5 s, 1 s, 2 s, ... */
const BACKOFF_BASE_MS = 500;

/**
 * Milliseconds a `Retry-After` value asks for (delta-seconds or an HTTP-date, RFC 9110 10.2.3);
 * null when the header is absent or unreadable.
 */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP-date names its day and month (`Thu, 26 Nov 2026 10:00:02 GMT`); Date.parse would also take `-1`.
  const at = /[a-z]/i.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A fetch that sends a request again after 429 (any method) or 503 (idempotent methods), waiting what the answer's `Retry-After`
 * says (exponential backoff when it says nothing), at most `maxRetries` times and never longer
 * than `maxWaitMs` at once. The last answer is returned as it came.
 */
export function retryingFetch(
  send: (request: Request) => Promise<Response>,
  options: RetryOptions = {},
): (request: Request) => Promise<Response> {
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  const maxWaitMs = options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      // A clone per attempt keeps the body readable for the next one.
      const response = await send(attempt < maxRetries ? request.clone() : request);
      if (!retried(response.status, request.method) || attempt >= maxRetries) return response;
      const waitMs = retryAfterMs(response.headers.get('Retry-After')) ?? BACKOFF_BASE_MS * 2 ** attempt;
      if (waitMs > maxWaitMs) return response;
      // The answer is dropped: free its connection now.
      await response.body?.cancel();
      options.onRetry?.({
        attempt: attempt + 1,
        status: response.status,
        method: request.method,
        url: request.url,
        waitMs,
      });
      await sleep(waitMs, request.signal);
    }
  };
}
