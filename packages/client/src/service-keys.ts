import type { Client } from 'openapi-fetch';
import { dataOf } from './errors.js';
import type { paths } from './generated/openapi.js';
import type {
  ListServiceKeysQuery,
  MintedServiceKey,
  MintServiceKeyRequest,
  RotatedApiKey,
  RotateKeyRequest,
  ServiceKeyList,
} from './types.js';

/** Keys an org owns, not a person (owners and admins, browser session only). */
export class ServiceKeys {
  constructor(private readonly api: Client<paths>) {}

  private static at(orgId: string, keyId: string) {
    return { path: { org_id: orgId, keyID: keyId } };
  }

  /** Mints a service key; the full key (`key`) is in this answer and never again. */
  mint(orgId: string, body: MintServiceKeyRequest): Promise<MintedServiceKey> {
    return dataOf(this.api.POST('/orgs/{org_id}/service-keys', { params: { path: { org_id: orgId } }, body }));
  }

  /** One page of the org's service keys, newest first. */
  list(orgId: string, query: ListServiceKeysQuery = {}): Promise<ServiceKeyList> {
    return dataOf(this.api.GET('/orgs/{org_id}/service-keys', { params: { path: { org_id: orgId }, query } }));
  }

  /** A new secret; the replaced one keeps verifying for `grace_period_seconds`. */
  rotate(orgId: string, keyId: string, body?: RotateKeyRequest): Promise<RotatedApiKey> {
    return dataOf(
      this.api.POST('/orgs/{org_id}/service-keys/{keyID}/rotate', { params: ServiceKeys.at(orgId, keyId), body }),
    );
  }

  async revoke(orgId: string, keyId: string): Promise<void> {
    await dataOf(this.api.DELETE('/orgs/{org_id}/service-keys/{keyID}', { params: ServiceKeys.at(orgId, keyId) }));
  }
}
