// Errors as a person reads them. The API's refusals arrive as the typed client's ApiError (with
// the service's own message); PageError is a refusal the page says itself (no answer at all, or
// a field it cannot send).
import { ApiError } from '../../../packages/client/src/errors.js';

export { ApiError };

export class PageError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The HTTP status of a refusal; 0 when nothing answered. */
export const errorStatus = (err: unknown): number =>
  err instanceof ApiError || err instanceof PageError ? err.status : 0;

/** The service's message (its error body), else what went wrong in a sentence. */
export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) return err.body?.message ?? `The request failed (HTTP ${err.status}).`;
  return err instanceof Error ? err.message : String(err);
}

/** The route is not on this deployment (yet): its feature stays hidden. */
export const isMissingRoute = (err: unknown): boolean => [404, 405, 501].includes(errorStatus(err));

/** A 401 signs the page out where it happens (api.ts); the caller has nothing more to do. */
export const handledElsewhere = (err: unknown): boolean => err instanceof ApiError && err.status === 401;

/** What a person should read for an API error: a short headline for the well-known cases, then the server's own message. */
export function describeError(err: unknown): { title: string; detail: string } {
  const status = errorStatus(err);
  const message = errorMessage(err);
  switch (status) {
    case 409:
      return {
        title: /workspace|repository/i.test(message)
          ? 'Connect a repository to this organisation first.'
          : 'Not possible right now.',
        detail: message,
      };
    case 501:
      return { title: 'API keys are not enabled on this deployment.', detail: message };
    case 403:
      return { title: 'Not allowed.', detail: message };
    case 404:
      return { title: 'Not found.', detail: message };
    case 429: {
      const wait = err instanceof ApiError ? err.retryAfterMs : null;
      return {
        title: 'Too many requests.',
        detail: wait !== null ? `${message} Try again in ${Math.ceil(wait / 1000)} s.` : message,
      };
    }
    default:
      return { title: status >= 500 ? 'Something went wrong on the server.' : '', detail: message };
  }
}
