import type { Client } from 'openapi-fetch';
import { dataOf } from './errors.js';
import type { paths } from './generated/openapi.js';
import type {
  ApiKey,
  ApiKeyList,
  KeyDailyUsageReport,
  KeyUsageQuery,
  ListKeysQuery,
  MintedApiKey,
  MintKeyRequest,
  RotatedApiKey,
  RotateKeyRequest,
  ScopeUsage,
  ScopeUsageQuery,
  UpdateKeyRequest,
  VerificationOutcomes,
  VerificationsQuery,
} from './types.js';

/** The caller's own keys: mint, list, rotate, revoke (browser session only; an API key gets 403). */
export class Keys {
  constructor(private readonly api: Client<paths>) {}

  /** Mints a key bound to `org_id`. The full key (`key`) is in this answer and never again. */
  mint(body: MintKeyRequest): Promise<MintedApiKey> {
    return dataOf(this.api.POST('/api-keys', { body }));
  }

  /** One page of the caller's keys, newest first; pass the page's `next_cursor` as `cursor` for the next. */
  list(query: ListKeysQuery = {}): Promise<ApiKeyList> {
    return dataOf(this.api.GET('/api-keys', { params: { query } }));
  }

  /** Every key matching `query`, page after page, newest first. */
  async *listAll(query: Omit<ListKeysQuery, 'cursor'> = {}): AsyncGenerator<ApiKey, void, undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.list({ ...query, cursor });
      yield* page.keys;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /** A new secret for the same key; the replaced one keeps verifying for `grace_period_seconds`. */
  rotate(keyId: string, body?: RotateKeyRequest): Promise<RotatedApiKey> {
    return dataOf(this.api.POST('/api-keys/{keyID}/rotate', { params: { path: { keyID: keyId } }, body }));
  }

  /** Revokes the key (revoking a revoked key changes nothing). */
  async revoke(keyId: string): Promise<void> {
    await dataOf(this.api.DELETE('/api-keys/{keyID}', { params: { path: { keyID: keyId } } }));
  }

  /**
   * Changes the key's settings (omitted fields stay, null clears one) and answers the key record;
   * `scopes` may only narrow it (a scope it does not hold is a 403:
   * a key is never widened). Every instance applies it before this resolves.
   */
  update(keyId: string, body: UpdateKeyRequest): Promise<ApiKey> {
    return dataOf(this.api.PATCH('/api-keys/{keyID}', { params: { path: { keyID: keyId } }, body }));
  }

  /** Which of its scopes the key used in the last `days` UTC days (default 30), and which it did not. */
  scopeUsage(keyId: string, query: ScopeUsageQuery = {}): Promise<ScopeUsage> {
    return dataOf(this.api.GET('/api-keys/{keyID}/scope-usage', { params: { path: { keyID: keyId }, query } }));
  }

  /**
   * What the requests with the key were decided (`valid`, or why refused), per UTC hour or day
   * over `from`..`to` (default: the last 30 days, by day); hours or days without a request are left out.
   */
  verifications(keyId: string, query: VerificationsQuery = {}): Promise<VerificationOutcomes> {
    return dataOf(this.api.GET('/api-keys/{keyID}/verifications', { params: { path: { keyID: keyId }, query } }));
  }

  /** The key's own daily usage over `from`..`to` (UTC days). */
  usage(keyId: string, query: KeyUsageQuery = {}): Promise<KeyDailyUsageReport> {
    return dataOf(this.api.GET('/api-keys/{keyID}/usage', { params: { path: { keyID: keyId }, query } }));
  }
}
