import type { ApiKeyEntity } from './api-key.entity.js';
import { nextRefill, refillPeriodStart } from '../budgets/key-settings.js';
import type { ApiKeyRecordDto, MintedApiKeyDto, OrgApiKeyDto } from './dto/api-key-record.dto.js';
import { settingsRecord } from './key-settings.sql.js';
import { keyStateOf } from './key-state.js';

/**
 * The key record of the contract (2.1): the DTO classes are the shapes (one class per shape,
 * serving OpenAPI and types). Fields that do not apply yet are omitted, not null.
 */
export type ApiKeyRecord = ApiKeyRecordDto;
export type MintedApiKey = MintedApiKeyDto;
/** A key of an org as its owners and admins see it (`GET /orgs/{org_id}/api-keys`). */
export type OrgApiKeyRecord = OrgApiKeyDto;

/** `now` decides the key's state and whether a rotation's grace period is still running (omitted: the current time). */
export function toApiKeyRecord(k: ApiKeyEntity, now: Date = new Date()): ApiKeyRecord {
  const record: ApiKeyRecord = {
    id: k.id,
    org_id: k.orgId,
    name: k.name,
    lookup: k.lookup,
    last4: k.last4,
    scopes: k.scopes,
    created_at: k.createdAt.toISOString(),
    state: keyStateOf(k, now),
  };
  if (k.expiresAt) record.expires_at = k.expiresAt.toISOString();
  if (k.lastUsedAt) record.last_used_at = k.lastUsedAt.toISOString();
  if (k.revokedAt) record.revoked_at = k.revokedAt.toISOString();
  if (k.previousExpiresAt && !k.revokedAt && k.previousExpiresAt.getTime() > now.getTime()) {
    record.previous_secret_expires_at = k.previousExpiresAt.toISOString();
  }
  // The settings appear only when set, so a key without them keeps the contract's record exactly.
  Object.assign(record, settingsRecord(k));
  const balance = creditsBalance(k, now);
  if (balance !== null) {
    record.credits = { remaining: balance };
    if (k.creditsRefill) {
      record.credits.refill = k.creditsRefill;
      record.credits.next_refill_at = nextRefill(k.creditsRefill, now).toISOString();
    }
  }
  // Who set each control the record shows (control-owners.ts); absent when it shows none.
  const setBy = Object.entries(k.controlsSetBy ?? {}).filter(([control]) => control in record);
  if (setBy.length > 0) record.controls_set_by = Object.fromEntries(setBy);
  return record;
}

/** A key's credit balance as its record shows it (leased credits count as spent; a refill due is applied); null: no credits. */
export function creditsBalance(
  k: Pick<ApiKeyEntity, 'creditsRemaining' | 'creditsRefill' | 'creditsPeriod'>,
  now: Date,
): number | null {
  if (k.creditsRemaining === null || k.creditsRemaining === undefined) return null;
  // A refill that no request has applied yet is due all the same.
  if (k.creditsRefill) {
    const period = refillPeriodStart(k.creditsRefill, now);
    if (!k.creditsPeriod || k.creditsPeriod.getTime() < period.getTime()) return k.creditsRefill.amount;
  }
  return Number(k.creditsRemaining);
}
