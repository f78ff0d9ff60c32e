import { randomUUID } from 'node:crypto';
import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import type { AuditAction } from '../audit/audit-actions.js';
import type { ChangeActor } from '../audit/audit.service.js';
import { generateApiKey, hashApiKey } from '../auth/api-key-format.js';
import { ERRORS } from '../common/error-messages.js';
import type { Role, Scope } from '../common/roles.js';
import type { EventType } from '../events/event-types.js';
import { Settings } from '../settings/settings.js';
import type { ApiKeyEntity } from './api-key.entity.js';
import type { NewApiKey } from './api-key-write.repository.js';
import { ApiKeyRepository } from './api-key.repository.js';
import { DEFAULT_GRACE_PERIOD_SECONDS } from './dto/rotate-api-key.dto.js';
import type { KeySettingsDto } from './dto/key-settings.dto.js';
import { controlsSetByAfter } from './control-owners.js';
import type { SetBy } from './controls-set-by.js';
import { KeyChanges } from './key-changes.js';
import { KeyPolicyPort } from './key-policy.port.js';
import { settingsColumns, type SettingsColumns } from './key-settings.sql.js';

const DAY_MS = 86_400_000;

/** The settings a mint body may carry beside its name (KeySettingsDto). */
export type MintSettingsFields = Omit<KeySettingsDto, 'name'>;

/** A new key as its events describe it before it is written. */
export type NewKeyFields = NewApiKey & { revokedAt: null };

/** The settings a mint body sets, as columns, with who set its controls; undefined when it sets none (the contract's body). */
function mintSettings(body: MintSettingsFields, now: Date, by: SetBy): SettingsColumns | undefined {
  const { name: _label, ...columns } = settingsColumns(body, now);
  if (Object.keys(columns).length === 0) return undefined;
  const setBy = controlsSetByAfter(null, columns, by);
  return setBy ? { ...columns, controls_set_by: setBy } : columns;
}

const JUDGED: unique symbol = Symbol('judged by the org key policy');

/** A mint the org's key policy allowed: only KeyMinting.judge makes one, and KeyMinting.mint needs one. */
export interface MintVerdict {
  readonly orgId: string;
  readonly scopes: Scope[];
  readonly expiresInDays: number;
  /** The key waits for an owner's or admin's approval. */
  readonly pending: boolean;
  readonly [JUDGED]: true;
}

export interface MintJudgement {
  orgId: string;
  /** The minting user's role in the org (the operator CLI acts with the org's highest, owner). */
  role: Role;
  /** As ScopeRegistry.grantable gave them. */
  scopes: Scope[];
  /** 0 or omitted: no expiry. */
  expiresInDays?: number;
  /** Whether the approval rule may hold the key (a personal key); a service key is never held. */
  approvable: boolean;
}

export interface KeyMint {
  /** The key's holder: the minting user, or the org's service account. */
  holder: string;
  name?: string;
  settings: MintSettingsFields;
  /** Who sets the mint's controls: `owner` for a personal key, `admin` for a service key (control-owners.ts). */
  setBy: SetBy;
  /** A service key's minting owner or admin (null: the operator CLI); omitted for a personal key. */
  createdBy?: string | null;
  actor: ChangeActor;
  /** The holder's active-key cap in the org, and the 409's message when it is reached. */
  cap: { limit: number; refusal: string };
  /** The audit action; `details` join the key's name, lookup, scopes and expiry. */
  audit: { action: AuditAction; details?: Record<string, unknown> };
  /** The event of an allowed key (a pending one is announced as `api_key.pending`), and its data. */
  event: { type: EventType; data: (key: NewKeyFields) => Record<string, unknown> };
}

export interface KeyRotation {
  /** The key's holder: the caller's own key, or the org's service account's. */
  holder: string;
  keyId: string;
  gracePeriodSeconds?: number;
  actor: ChangeActor;
  /** The 404's message for no such key of the holder. */
  notFound: string;
  audit: { action: AuditAction };
  /** The event's data beyond `previous_lookup` and `previous_secret_expires_at`. */
  event: { type: EventType; data: (key: ApiKeyEntity) => Record<string, unknown> };
}

/**
 * The one way a key is minted or rotated, for personal and service keys alike: the org's key
 * policy judges it, then a secret is drawn, hashed and written through KeyChanges with its
 * audit entry and event. The callers decide who may ask and for whom (the holder, the cap).
 */
@Injectable()
export class KeyMinting {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly changes: KeyChanges,
    private readonly settings: Settings,
    private readonly policy: KeyPolicyPort,
  ) {}

  /** The org's key policy (key-policies/): lifetime, required expiry, scopes by role (400/403 naming it), approval. */
  async judge({ orgId, role, scopes, expiresInDays = 0, approvable }: MintJudgement): Promise<MintVerdict> {
    const { pending } = await this.policy.judgeMint({ orgId, role, scopes, expiresInDays });
    return { orgId, scopes, expiresInDays, pending: approvable && pending, [JUDGED]: true };
  }

  /** Writes the judged key; 409 (`cap.refusal`) when its holder is at the cap. The secret is in the answer only. */
  async mint(verdict: MintVerdict, m: KeyMint): Promise<{ key: ApiKeyEntity; secret: string }> {
    const { orgId, scopes, expiresInDays: days, pending } = verdict;
    const hmacKey = this.settings.apiKeySecret!; // the routes' guard answers 501 when it is unset
    const now = this.settings.clock.now();
    const minted = await this.changes.mint(() => {
      const generated = generateApiKey();
      const key: NewApiKey = {
        id: randomUUID(),
        userId: m.holder,
        orgId,
        name: m.name ?? '',
        lookup: generated.lookup,
        last4: generated.last4,
        keyHash: hashApiKey(hmacKey, generated.key),
        scopes,
        createdAt: now,
        expiresAt: days > 0 ? new Date(now.getTime() + days * DAY_MS) : null,
        createdBy: m.createdBy ?? null,
        approval: pending ? 'pending' : null,
        settings: mintSettings(m.settings, now, m.setBy),
      };
      return {
        secret: generated.key,
        change: { key, cap: m.cap.limit },
        audit: {
          orgId,
          action: m.audit.action,
          ...m.actor,
          target: { type: 'api_key', id: key.id },
          details: {
            name: key.name,
            lookup: key.lookup,
            scopes,
            expires_at: key.expiresAt?.toISOString() ?? null,
            ...m.audit.details,
            ...(pending ? { status: 'pending' } : {}),
          },
        },
        // A key awaiting approval is announced as pending; `api_key.approved` follows the approval.
        event: {
          orgId,
          type: pending ? 'api_key.pending' : m.event.type,
          data: m.event.data({ ...key, revokedAt: null }),
          at: now,
        },
      };
    });
    if (!minted) throw new ConflictException(m.cap.refusal);
    return minted;
  }

  /**
   * Rotation with a grace period: same key (id, name, org, scopes, expiry), new secret shown once.
   * The replaced secret verifies until `gracePeriodSeconds` from now; a second rotation drops the
   * older one at once. The key keeps its expiry: a policy that requires one refuses a key without
   * (400). 404 (`notFound`) for no such key of the holder; 409 for a revoked or expired one.
   */
  async rotate(r: KeyRotation): Promise<{ key: ApiKeyEntity; secret: string; now: Date }> {
    const hmacKey = this.settings.apiKeySecret!; // the routes' guard answers 501 when it is unset
    const grace = r.gracePeriodSeconds ?? DEFAULT_GRACE_PERIOD_SECONDS;
    const now = this.settings.clock.now();
    const graceEndsAt = grace > 0 ? new Date(now.getTime() + grace * 1000) : null;
    const previousExpiresAt = graceEndsAt?.toISOString() ?? null;
    const before = await this.keys.keyStanding(r.holder, r.keyId);
    if (before && !before.revokedAt) await this.policy.judgeRotation(before.orgId, before.expiresAt);
    const rotated = await this.changes.rotate(() => {
      const generated = generateApiKey();
      return {
        secret: generated.key,
        change: {
          userId: r.holder,
          keyId: r.keyId,
          secret: { lookup: generated.lookup, last4: generated.last4, keyHash: hashApiKey(hmacKey, generated.key) },
          now,
          graceEndsAt,
        },
        audit: (k) => ({
          orgId: k.orgId,
          action: r.audit.action,
          ...r.actor,
          target: { type: 'api_key', id: k.id },
          details: {
            name: k.name,
            lookup: k.lookup,
            previous_lookup: k.previousLookup,
            grace_period_seconds: grace,
            previous_secret_expires_at: previousExpiresAt,
          },
        }),
        event: (k) => ({
          orgId: k.orgId,
          type: r.event.type,
          data: {
            ...r.event.data(k),
            previous_lookup: k.previousLookup,
            previous_secret_expires_at: previousExpiresAt,
          },
          at: now,
        }),
      };
    });
    if (!rotated) {
      const standing = await this.keys.keyStanding(r.holder, r.keyId);
      if (!standing) throw new NotFoundException(r.notFound);
      throw new ConflictException(standing.revokedAt ? ERRORS.keyRevokedCannotRotate : ERRORS.keyExpiredCannotRotate);
    }
    return { ...rotated, now };
  }
}
