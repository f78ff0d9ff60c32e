import type { ApiKeyEntity } from './api-key.entity.js';

/** The key record of the contract (2.1). Fields that do not apply yet are omitted, not null. */
export interface ApiKeyRecord {
  id: string;
  org_id: string;
  name: string;
  lookup: string;
  last4: string;
  scopes: string[];
  created_at: string;
  expires_at?: string;
  last_used_at?: string;
  revoked_at?: string;
  /** Rotation: the replaced secret still verifies until then (present only while it does). */
  previous_secret_expires_at?: string;
}

export interface MintedApiKey extends ApiKeyRecord {
  key: string;
}

/** `now` decides whether a rotation's grace period is still running (omitted: shown if set). */
export function toApiKeyRecord(k: ApiKeyEntity, now?: Date): ApiKeyRecord {
  const record: ApiKeyRecord = {
    id: k.id,
    org_id: k.orgId,
    name: k.name,
    lookup: k.lookup,
    last4: k.last4,
    scopes: k.scopes,
    created_at: k.createdAt.toISOString(),
  };
  if (k.expiresAt) record.expires_at = k.expiresAt.toISOString();
  if (k.lastUsedAt) record.last_used_at = k.lastUsedAt.toISOString();
  if (k.revokedAt) record.revoked_at = k.revokedAt.toISOString();
  if (k.previousExpiresAt && !k.revokedAt && (!now || k.previousExpiresAt.getTime() > now.getTime())) {
    record.previous_secret_expires_at = k.previousExpiresAt.toISOString();
  }
  return record;
}

/** A key of an org as its owners and admins see it (`GET /orgs/{org_id}/api-keys`). */
export interface OrgApiKeyRecord extends ApiKeyRecord {
  /** The user who minted it. */
  user_id: string;
  /** Their e-mail (omitted if the user is unknown to this service's directory). */
  owner_email?: string;
  /** `removed`: the owner is no longer a member of the org, so the key no longer verifies. */
  owner_status: 'member' | 'removed';
  state: 'active' | 'revoked' | 'expired';
}
