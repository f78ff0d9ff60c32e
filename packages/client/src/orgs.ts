import type { Client } from 'openapi-fetch';
import { dataOf } from './errors.js';
import type { paths } from './generated/openapi.js';
import type {
  ApiKey,
  AuditEventPage,
  KeyDailyUsageReport,
  KeyPolicy,
  KeyPolicyRequest,
  KeyUsageQuery,
  ListAuditEventsQuery,
  ListMembersQuery,
  ListOrgKeysQuery,
  ListOrgsQuery,
  OrgApiKeyList,
  OrgList,
  OrgMemberList,
  ScopeUsage,
  ScopeUsageQuery,
  UpdateKeyRequest,
  VerificationOutcomes,
  VerificationsQuery,
} from './types.js';

/** The caller's orgs and, for owners and admins, their members, keys and audit log (browser session only). */
export class Orgs {
  constructor(private readonly api: Client<paths>) {}

  /** The orgs the caller belongs to, with the caller's role in each. */
  list(query: ListOrgsQuery = {}): Promise<OrgList> {
    return dataOf(this.api.GET('/orgs', { params: { query } }));
  }

  /** The org's members (owners and admins). */
  members(orgId: string, query: ListMembersQuery = {}): Promise<OrgMemberList> {
    return dataOf(this.api.GET('/orgs/{org_id}/members', { params: { path: { org_id: orgId }, query } }));
  }

  /** Every member's keys in the org (owners and admins). */
  keys(orgId: string, query: ListOrgKeysQuery = {}): Promise<OrgApiKeyList> {
    return dataOf(this.api.GET('/orgs/{org_id}/api-keys', { params: { path: { org_id: orgId }, query } }));
  }

  /** Revokes any member's key in the org (owners and admins). */
  async revokeKey(orgId: string, keyId: string): Promise<void> {
    await dataOf(
      this.api.DELETE('/orgs/{org_id}/api-keys/{keyID}', { params: { path: { org_id: orgId, keyID: keyId } } }),
    );
  }

  /**
   * Changes any key of the org (owners and admins) and answers the key record; `scopes` may only
   * narrow it (a scope it does not hold is a 403). Every instance applies it before this resolves.
   */
  updateKey(orgId: string, keyId: string, body: UpdateKeyRequest): Promise<ApiKey> {
    return dataOf(
      this.api.PATCH('/orgs/{org_id}/api-keys/{keyID}', { params: { path: { org_id: orgId, keyID: keyId } }, body }),
    );
  }

  /** Which of its scopes any key of the org used in the last `days` UTC days (owners and admins). */
  keyScopeUsage(orgId: string, keyId: string, query: ScopeUsageQuery = {}): Promise<ScopeUsage> {
    return dataOf(
      this.api.GET('/orgs/{org_id}/api-keys/{keyID}/scope-usage', {
        params: { path: { org_id: orgId, keyID: keyId }, query },
      }),
    );
  }

  /** What the requests with any key of the org were decided, per UTC hour or day (owners and admins). */
  keyVerifications(orgId: string, keyId: string, query: VerificationsQuery = {}): Promise<VerificationOutcomes> {
    return dataOf(
      this.api.GET('/orgs/{org_id}/api-keys/{keyID}/verifications', {
        params: { path: { org_id: orgId, keyID: keyId }, query },
      }),
    );
  }

  /** The same, summed over every key of the org, personal and service keys alike (owners and admins). */
  verifications(orgId: string, query: VerificationsQuery = {}): Promise<VerificationOutcomes> {
    return dataOf(this.api.GET('/orgs/{org_id}/verifications', { params: { path: { org_id: orgId }, query } }));
  }

  /** Approves a key the org's key policy holds (owners and admins): it verifies from now on. */
  async approveKey(orgId: string, keyId: string): Promise<void> {
    await dataOf(
      this.api.POST('/orgs/{org_id}/api-keys/{keyID}/approve', { params: { path: { org_id: orgId, keyID: keyId } } }),
    );
  }

  /** Denies a key the org's key policy holds (owners and admins): it never verifies. */
  async denyKey(orgId: string, keyId: string): Promise<void> {
    await dataOf(
      this.api.POST('/orgs/{org_id}/api-keys/{keyID}/deny', { params: { path: { org_id: orgId, keyID: keyId } } }),
    );
  }

  /** The org's key policy (owners and admins read it). */
  keyPolicy(orgId: string): Promise<KeyPolicy> {
    return dataOf(this.api.GET('/orgs/{org_id}/key-policy', { params: { path: { org_id: orgId } } }));
  }

  /** Replaces the org's key policy (owners). */
  setKeyPolicy(orgId: string, body: KeyPolicyRequest): Promise<KeyPolicy> {
    return dataOf(this.api.PUT('/orgs/{org_id}/key-policy', { params: { path: { org_id: orgId } }, body }));
  }

  /** A member's key's daily usage over `from`..`to` (owners and admins). */
  keyUsage(orgId: string, keyId: string, query: KeyUsageQuery = {}): Promise<KeyDailyUsageReport> {
    return dataOf(
      this.api.GET('/orgs/{org_id}/api-keys/{keyID}/usage', {
        params: { path: { org_id: orgId, keyID: keyId }, query },
      }),
    );
  }

  /** The org's audit log, newest first (owners and admins). */
  auditEvents(orgId: string, query: ListAuditEventsQuery = {}): Promise<AuditEventPage> {
    return dataOf(this.api.GET('/orgs/{org_id}/audit-events', { params: { path: { org_id: orgId }, query } }));
  }
}
