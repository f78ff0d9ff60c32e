import type { components } from './generated/openapi.js';
import { retryAfterMs } from './retry.js';

/** The service's error body: `{ statusCode, error, message }`. */
export type ErrorBody = components['schemas']['KuiError'];

function isErrorBody(body: unknown): body is ErrorBody {
  return (
    typeof body === 'object' &&
    body !== null &&
    typeof (body as Partial<ErrorBody>).message === 'string' &&
    typeof (body as Partial<ErrorBody>).statusCode === 'number'
  );
}

/** An answer that is not 2xx (after any retries). `body` is the service's error body when it sent one. */
export class ApiError extends Error {
  readonly status: number;
  readonly body: ErrorBody | undefined;
  readonly response: Response;

  constructor(response: Response, body: unknown) {
    const error = isErrorBody(body) ? body : undefined;
    super(
      error
        ? `${response.status} ${error.error}: ${error.message}`
        : `${response.status} ${response.statusText}`.trim(),
    );
    this.name = 'ApiError';
    this.status = response.status;
    this.body = error;
    this.response = response;
  }

  /** Milliseconds the service asked the caller to wait (429, 503), or null when it did not say. */
  get retryAfterMs(): number | null {
    return retryAfterMs(this.response.headers.get('Retry-After'));
  }
}

/** The result of an openapi-fetch call: its data on 2xx; otherwise an ApiError is thrown. */
export async function dataOf<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw new ApiError(response, error);
  return data as T;
}
