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
}

export interface MintedApiKey extends ApiKeyRecord {
  key: string;
}

export function toApiKeyRecord(k: ApiKeyEntity): ApiKeyRecord {
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
  return record;
}
