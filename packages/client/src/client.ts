import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { LATEST_API_VERSION } from './api-version.js';
import { dataOf } from './errors.js';
import type { paths } from './generated/openapi.js';
import { Keys } from './keys.js';
import { Orgs } from './orgs.js';
import { retryingFetch, type RetryOptions } from './retry.js';
import type { OrgOption, Principal, ScopeList } from './types.js';
import { orgHeader, Usage } from './usage.js';
import { Webhooks } from './webhooks.js';

/** An API key (`svc_live_…`) or a browser session JWT; a function is asked before every request (to refresh a session). */
export type Credential = string | (() => string | Promise<string>);

export interface ClientOptions {
  /** Where the service is, e.g. `https://keys.example.com`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <credential>`. */
  credential?: Credential;
  /** Sent as `Api-Version` on every request; default the newest version the client knows (LATEST_API_VERSION). */
  apiVersion?: string;
  /** Retries of 429 (any method) and 503 (methods safe to repeat), Retry-After honoured; `{ maxRetries: 0 }` turns them off. */
  retry?: RetryOptions;
  /** Headers for every request (e.g. a User-Agent). */
  headers?: Record<string, string>;
  /** The fetch to send with (default globalThis.fetch). */
  fetch?: (request: Request) => Promise<Response>;
}

function authentication(credential: Credential | undefined, apiVersion: string): Middleware {
  return {
    async onRequest({ request }) {
      request.headers.set('Api-Version', apiVersion);
      if (credential !== undefined)
        request.headers.set(
          'Authorization',
          `Bearer ${typeof credential === 'string' ? credential : await credential()}`,
        );
      return request;
    },
  };
}

/**
 * The Keys, Usage and Identity API. Methods return the answer's body and throw an `ApiError` for
 * any other answer than 2xx; `raw` is the underlying openapi-fetch client, typed for every route
 * of the OpenAPI document, for what the methods do not cover.
 */
export class KeysUsageIdentityClient {
  readonly raw: Client<paths>;
  readonly apiVersion: string;
  readonly keys: Keys;
  readonly usage: Usage;
  readonly orgs: Orgs;
  readonly webhooks: Webhooks;

  constructor(options: ClientOptions) {
    this.apiVersion = options.apiVersion ?? LATEST_API_VERSION;
    const send = options.fetch ?? ((request: Request) => globalThis.fetch(request));
    this.raw = createClient<paths>({
      baseUrl: options.baseUrl,
      headers: options.headers,
      fetch: retryingFetch(send, options.retry),
    });
    this.raw.use(authentication(options.credential, this.apiVersion));
    this.keys = new Keys(this.raw);
    this.usage = new Usage(this.raw);
    this.orgs = new Orgs(this.raw);
    this.webhooks = new Webhooks(this.raw);
  }

  /** The deployment's scopes, with whether the caller's role may grant each (`GET /scopes`). */
  scopes(options: OrgOption = {}): Promise<ScopeList> {
    return dataOf(this.raw.GET('/scopes', { params: { header: orgHeader(options) } }));
  }

  /** Who the caller is: user, org, role, scopes. */
  me(options: OrgOption = {}): Promise<Principal> {
    return dataOf(this.raw.GET('/me', { params: { header: orgHeader(options) } }));
  }
}
