import { BadRequestException, Injectable, NotFoundException } from '@nestjs/common';
import { actorOf, OPERATOR, type ChangeActor } from '../audit/audit.service.js';
import { refillPeriodStart } from '../budgets/key-settings.js';
import { requireOrgAdmin } from '../auth/org-access.js';
import type { Principal } from '../auth/principal.js';
import { ERRORS } from '../common/error-messages.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { keyEventData, type OutboxEvent } from '../events/event-types.js';
import type { AuditEntry } from '../audit/audit.service.js';
import type { ApiKeyEntity } from './api-key.entity.js';
import { Settings } from '../settings/settings.js';
import { toApiKeyRecord, type ApiKeyRecord } from './api-key.record.js';
import type { UpdateApiKeyDto } from './dto/update-api-key.dto.js';
import { KeyChanges } from './key-changes.js';
import type { KeySettingsChange } from './key-settings.sql.js';

/**
 * A key's settings changed by its owner (`PATCH /api-keys/{id}`) or an org owner or admin
 * (`PATCH /orgs/{org_id}/api-keys/{id}`), through KeyChanges: audited and announced as
 * `api_key.updated`, applied on every instance before the answer. Not yours or missing: 404.
 */
@Injectable()
export class KeySettingsService {
  constructor(
    private readonly changes: KeyChanges,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
  ) {}

  update(principal: Principal, keyId: string, dto: UpdateApiKeyDto): Promise<ApiKeyRecord> {
    return this.apply(actorOf(principal), 'user_id', principal.userId, keyId, dto);
  }

  /** The operator CLI (`key update`): any key by its id, audited with the CLI as actor. */
  updateAsOperator(keyId: string, dto: UpdateApiKeyDto): Promise<ApiKeyRecord> {
    return this.apply(OPERATOR, 'id', keyId, keyId, dto);
  }

  async updateInOrg(principal: Principal, orgId: string, keyId: string, dto: UpdateApiKeyDto): Promise<ApiKeyRecord> {
    await requireOrgAdmin(this.directory, principal, orgId);
    return this.apply(actorOf(principal), 'org_id', orgId, keyId, dto);
  }

  private async apply(
    actor: ChangeActor,
    scope: 'user_id' | 'org_id' | 'id',
    owner: string,
    keyId: string,
    dto: UpdateApiKeyDto,
  ): Promise<ApiKeyRecord> {
    const now = this.settings.clock.now();
    const settings = toChange(dto, now);
    const fields = Object.keys(dto).filter((k) => (dto as Record<string, unknown>)[k] !== undefined);
    if (fields.length === 0) throw new BadRequestException(ERRORS.noKeySettings);
    if (dto.scopes !== undefined) {
      this.settings.scopes.requireRegistered('scopes', dto.scopes);
      settings.scopes = this.settings.scopes.canonical(dto.scopes);
    }
    // A narrowing is its own entry and event (with the scopes before and after); anything else, `api_key.updated`.
    const narrowedFrom = (k: ApiKeyEntity, before: string[] | null) =>
      before && before.some((s) => !k.scopes.includes(s)) ? before : null;
    const others = fields.filter((f) => f !== 'scopes');
    const updatedToo = (k: ApiKeyEntity, before: string[] | null) =>
      others.length > 0 || narrowedFrom(k, before) === null;
    const updated = await this.changes.update({
      change: { scope, owner, keyId, settings },
      audit: (k, before) => {
        const entries: AuditEntry[] = [];
        const from = narrowedFrom(k, before);
        if (from) {
          entries.push({
            orgId: k.orgId,
            action: 'api_key.scopes_narrowed',
            ...actor,
            target: { type: 'api_key', id: k.id },
            details: { name: k.name, before: from, after: k.scopes },
          });
        }
        if (updatedToo(k, before)) {
          entries.push({
            orgId: k.orgId,
            action: 'api_key.updated',
            ...actor,
            target: { type: 'api_key', id: k.id },
            // What changed, by name: metadata and networks can be sensitive to their owner, so only named.
            details: { name: k.name, changed: fields, ...(dto.enabled !== undefined ? { enabled: dto.enabled } : {}) },
          });
        }
        return entries;
      },
      event: (k, before) => {
        const events: OutboxEvent[] = [];
        const from = narrowedFrom(k, before);
        if (from) {
          events.push({
            orgId: k.orgId,
            type: 'api_key.scopes_narrowed',
            data: { ...keyEventData(k), scopes_before: from },
            at: now,
          });
        }
        if (updatedToo(k, before)) {
          events.push({
            orgId: k.orgId,
            type: 'api_key.updated',
            data: { ...keyEventData(k), changed: fields, enabled: k.enabled },
            at: now,
          });
        }
        return events;
      },
    });
    if (!updated) throw new NotFoundException(ERRORS.keyNotFound);
    return toApiKeyRecord(updated, now);
  }
}

function toChange(dto: UpdateApiKeyDto, now: Date): KeySettingsChange {
  const change: KeySettingsChange = {};
  if (dto.name !== undefined) change.name = dto.name;
  if (dto.enabled !== undefined) change.enabled = dto.enabled;
  if (dto.rate_limits !== undefined) change.rateLimits = dto.rate_limits;
  if (dto.credits !== undefined) {
    change.credits = dto.credits && {
      remaining: dto.credits.remaining,
      refill: dto.credits.refill,
      // The balance given belongs to the current refill period: the next refill is at its end.
      period: dto.credits.refill ? refillPeriodStart(dto.credits.refill, now) : null,
    };
  }
  if (dto.allowed_cidrs !== undefined) change.allowedCidrs = dto.allowed_cidrs;
  if (dto.metadata !== undefined) change.metadata = dto.metadata;
  return change;
}
