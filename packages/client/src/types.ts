// Names for the generated types: every type here is an alias of what openapi-typescript generated
// from the service's OpenAPI document (src/generated/openapi.ts); none is written by hand.
import type { components, operations } from './generated/openapi.js';

type Schemas = components['schemas'];
type QueryOf<O extends keyof operations> = operations[O]['parameters'] extends { query?: infer Q }
  ? NonNullable<Q>
  : never;

export type ApiKey = Schemas['ApiKey'];
/** Who set each control a key record shows: `owner` or `admin` (the key's owner may only narrow an admin's). */
export type KeyControlsSetBy = Schemas['KeyControlsSetBy'];
export type MintedApiKey = Schemas['MintedApiKey'];
export type RotatedApiKey = Schemas['RotatedApiKey'];
export type ApiKeyList = Schemas['ApiKeyList'];
export type MintKeyRequest = Schemas['MintApiKeyRequest'];
export type RotateKeyRequest = Schemas['RotateApiKeyRequest'];
export type ListKeysQuery = QueryOf<'listApiKeys'>;
export type KeyUsageQuery = QueryOf<'getApiKeyUsage'>;
export type KeyDailyUsageReport = Schemas['KeyDailyUsageReport'];
export type UpdateKeyRequest = Schemas['UpdateApiKeyRequest'];
export type ScopeUsage = Schemas['ScopeUsage'];
export type ScopeUsageQuery = QueryOf<'getApiKeyScopeUsage'>;
export type VerificationOutcomes = Schemas['VerificationOutcomes'];
export type VerificationBucket = Schemas['VerificationBucket'];
export type VerificationOutcomeCounts = Schemas['VerificationOutcomeCounts'];
export type VerificationsQuery = QueryOf<'getApiKeyVerifications'>;
/** The deployment's scopes (`GET /scopes`); a scope is a string: each deployment registers its own. */
export type ScopeList = Schemas['ScopeList'];
export type ScopeDescription = Schemas['ScopeDescription'];

export type UsageReport = Schemas['UsageReport'];
/** `{ used, limit }` of one meter; `limit` null = unlimited. */
export type Meter = Schemas['Meter'];
/** Every meter by name: the contract's four always, and whatever meters the deployment defines (any other name). */
export type UsageMeters = Schemas['UsageMeters'];
export type DailyUsageReport = Schemas['DailyUsageReport'];
export type DailyUsageQuery = QueryOf<'getDailyUsage'>;
export type Principal = Schemas['Principal'];

export type Org = Schemas['Org'];
export type OrgList = Schemas['OrgList'];
export type ListOrgsQuery = QueryOf<'listMyOrgs'>;
export type OrgMemberList = Schemas['OrgMemberList'];
export type ListMembersQuery = QueryOf<'listOrgMembers'>;
export type OrgApiKeyList = Schemas['OrgApiKeyList'];
export type ListOrgKeysQuery = QueryOf<'listOrgApiKeys'>;
export type AuditEvent = Schemas['AuditEvent'];
export type AuditEventPage = Schemas['AuditEventPage'];
export type ListAuditEventsQuery = QueryOf<'listAuditEvents'>;
export type OrgApiKey = Schemas['OrgApiKey'];
export type KeyPolicy = Schemas['KeyPolicy'];
export type KeyPolicyRequest = Schemas['KeyPolicyRequest'];

export type ServiceKey = Schemas['ServiceKey'];
export type ServiceKeyList = Schemas['ServiceKeyList'];
export type MintedServiceKey = Schemas['MintedServiceKey'];
export type MintServiceKeyRequest = Schemas['MintServiceKeyRequest'];
export type ListServiceKeysQuery = QueryOf<'listServiceKeys'>;

export type Webhook = Schemas['Webhook'];
export type CreatedWebhook = Schemas['CreatedWebhook'];
export type WebhookList = Schemas['WebhookList'];
export type CreateWebhookRequest = Schemas['CreateWebhookRequest'];
export type UpdateWebhookRequest = Schemas['UpdateWebhookRequest'];
export type RotateWebhookSecretRequest = Schemas['RotateWebhookSecretRequest'];
export type RotatedWebhookSecret = Schemas['RotatedWebhookSecret'];
export type WebhookQueued = Schemas['WebhookQueued'];
export type WebhookDeliveryList = Schemas['WebhookDeliveryList'];
export type ListWebhooksQuery = QueryOf<'listWebhooks'>;
export type ListDeliveriesQuery = QueryOf<'listWebhookDeliveries'>;

/** For `/me`, `/usage` and `/usage/daily`: which of the caller's orgs to answer for (`X-Org-Id`); a session without one uses its token's org. */
export interface OrgOption {
  orgId?: string;
}
