// The page's one way to the API: the typed client (packages/client), every request pinned to one
// API version, so an operator re-pinning the org never changes the shape of the page's answers.
import { LATEST_API_VERSION } from '../../../packages/client/src/api-version.js';
import { KeysUsageIdentityClient } from '../../../packages/client/src/client.js';
import { PageError } from './errors.js';

/**
 * The version every request of the page sends as `Api-Version`: the newest the client knows
 * (in the bundle, the newest of the service's own version table: scripts/build-account.mjs).
 */
export const PAGE_API_VERSION: string = LATEST_API_VERSION;

export interface ApiOptions {
  /** The session token of this tab, asked before every request (null: none yet). */
  token: () => string | null;
  /** Called on any 401 with the service's message: the token is no good any more. */
  onUnauthorized: (message: string) => void;
  /** Where the service is; the page's own origin by default. */
  baseUrl?: string;
  fetch?: typeof globalThis.fetch;
}

export const NETWORK_ERROR = 'Could not reach the service. Check your connection and try again.';

/** The client the page uses: its session token, no retries (the page offers "Try again" itself), nothing cached. */
export function createApi(options: ApiOptions): KeysUsageIdentityClient {
  const send = options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init));
  const client = new KeysUsageIdentityClient({
    baseUrl: options.baseUrl ?? location.origin,
    apiVersion: PAGE_API_VERSION,
    credential: () => options.token() ?? '',
    retry: { maxRetries: 0 },
    headers: { Accept: 'application/json' },
    async fetch(request) {
      try {
        return await send(new Request(request, { cache: 'no-store', credentials: 'omit' }));
      } catch {
        throw new PageError(0, NETWORK_ERROR);
      }
    },
  });
  client.raw.use({
    async onResponse({ response }) {
      if (response.status !== 401) return undefined;
      const body = (await response
        .clone()
        .json()
        .catch(() => null)) as { message?: unknown } | null;
      options.onUnauthorized(typeof body?.message === 'string' ? body.message : 'Unauthorized');
      return undefined;
    },
  });
  return client;
}

export type Api = KeysUsageIdentityClient;
