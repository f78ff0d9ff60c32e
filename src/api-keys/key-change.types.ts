import type { EntityManager } from 'typeorm';
import type { AuditEntry } from '../audit/audit.service.js';
import type { EventType, OutboxEvent } from '../events/event-types.js';
import type { ApiKeyEntity } from './api-key.entity.js';
import type { NewApiKey } from './api-key-write.repository.js';
import type { NewSecret, RevokedKey } from './api-key.repository.js';
import type { Decision, WarnedKey } from './api-key-policy.repository.js';
import type { SetBy } from './controls-set-by.js';
import type { SettingsChange } from './key-settings.sql.js';

/* The key changes KeyChanges writes (key-changes.ts): each one's change, audit entry and events. */

/** An audit entry whose org and target id only the change's own statement knows (a revoke by key id). */
export type KeyAuditTemplate = Omit<AuditEntry, 'orgId' | 'target'> & { target: { type: string } };

export interface MintChange {
  change: { key: NewApiKey; cap: number };
  audit: AuditEntry;
  event: OutboxEvent;
}

export interface RevokeChange {
  /** `user_id`: the owner's key only; `org_id`: any key of the org (an admin's revoke). */
  change: { scope: 'user_id' | 'org_id'; owner: string; keyId: string; at: Date };
  /** The statement adds the org, the key's id and the details `name` and, `withOwner`, `owner_id`. */
  audit: KeyAuditTemplate & { withOwner: boolean };
  /** `api_key.revoked` (or `type`: a service key's `service_key.revoked`), named after the revoker (null: the operator CLI). */
  event: { revokedBy: string | null; type?: EventType };
}

export interface RotateChange {
  change: { userId: string; keyId: string; secret: NewSecret; now: Date; graceEndsAt: Date | null };
  audit: (rotated: ApiKeyEntity) => AuditEntry;
  event: (rotated: ApiKeyEntity) => OutboxEvent;
}

export interface LeakedRevokeChange {
  change: { keyId: string; at: Date };
  audit: (revoked: RevokedKey) => AuditEntry;
  events: (revoked: RevokedKey) => OutboxEvent[];
}

/** An org key policy written, with the org's keys that outlive its lifetime limit (if any) cut to it. */
export interface PolicyChange {
  /** The policy's own write (its feature's repository), on the unit of work's manager. */
  policy: (manager: EntityManager) => Promise<void>;
  change: { orgId: string; maxLifetimeDays: number | null; now: Date };
  audit: (shortened: RevokedKey[]) => AuditEntry;
  events: (shortened: RevokedKey[]) => OutboxEvent[];
}

/** An owner's or admin's decision on a pending key. */
export interface DecisionChange {
  change: { orgId: string; keyId: string; decision: Decision; at: Date };
  audit: (decided: RevokedKey) => AuditEntry;
  event: (decided: RevokedKey) => OutboxEvent;
}

/** The stale sweep's warning (an event only: no key changes) and its revoke of one key. */
export interface StaleWarning {
  change: { orgId: string; idleSince: Date; now: Date; limit: number };
  event: (warned: WarnedKey) => OutboxEvent;
}
export interface StaleRevokeChange {
  change: { orgId: string; keyId: string; idleSince: Date; at: Date };
  audit: (revoked: RevokedKey) => AuditEntry;
  event: (revoked: RevokedKey) => OutboxEvent;
}

/** A key's settings changed (the columns of the settings sent; key-settings.sql.ts), by its owner or an admin (control-owners.ts). */
export interface UpdateChange {
  change: {
    scope: 'user_id' | 'org_id' | 'id';
    owner: string;
    keyId: string;
    settings: SettingsChange;
    by: SetBy;
    at: Date;
  };
  audit: (updated: ApiKeyEntity, before: string[] | null) => AuditEntry[];
  event: (updated: ApiKeyEntity, before: string[] | null) => OutboxEvent[];
}

/** A change drawn again on a lookup collision: `secret` is what the caller shows once (never written). */
export type Drawn<C> = C & { secret: string };
