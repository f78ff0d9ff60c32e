import { BadRequestException, Injectable, NotFoundException } from '@nestjs/common';
import { actorOf, OPERATOR, type ChangeActor } from '../audit/audit.service.js';
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
import type { SetBy } from './controls-set-by.js';
import { KeyChanges } from './key-changes.js';
import { SETTING_FIELDS, settingsColumns, type SettingsChange } from './key-settings.sql.js';

/**
 * A key's settings changed by its owner (`PATCH /api-keys/{id}`) or an org owner or admin
 * (`PATCH /orgs/{org_id}/api-keys/{id}`), through KeyChanges: audited and announced as
 * `api_key.updated`, applied on every instance before the answer. Not yours or missing: 404. The
 * owner's route may only narrow a control an org admin set (the org route's and the operator's
 * changes are an admin's: control-owners.ts).
 */
@Injectable()
export class KeySettingsService {
  constructor(
    private readonly changes: KeyChanges,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
  ) {}

  update(principal: Principal, keyId: string, dto: UpdateApiKeyDto): Promise<ApiKeyRecord> {
    return this.apply(actorOf(principal), 'user_id', principal.userId, keyId, dto, 'owner');
  }

  /** The operator CLI (`key update`): any key by its id, audited with the CLI as actor. */
  updateAsOperator(keyId: string, dto: UpdateApiKeyDto): Promise<ApiKeyRecord> {
    return this.apply(OPERATOR, 'id', keyId, keyId, dto, 'admin');
  }

  async updateInOrg(principal: Principal, orgId: string, keyId: string, dto: UpdateApiKeyDto): Promise<ApiKeyRecord> {
    await requireOrgAdmin(this.directory, principal, orgId);
    return this.apply(actorOf(principal), 'org_id', orgId, keyId, dto, 'admin');
  }

  private async apply(
    actor: ChangeActor,
    scope: 'user_id' | 'org_id' | 'id',
    owner: string,
    keyId: string,
    dto: UpdateApiKeyDto,
    by: SetBy,
  ): Promise<ApiKeyRecord> {
    const now = this.settings.clock.now();
    const settings: SettingsChange = settingsColumns(dto as Record<string, unknown>, now);
    const fields = Object.keys(dto).filter((k) => (dto as Record<string, unknown>)[k] !== undefined);
    if (fields.length === 0)
      throw new BadRequestException(ERRORS.noKeySettings([...SETTING_FIELDS.map((s) => s.field), 'scopes']));
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
      change: { scope, owner, keyId, settings, by, at: now },
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
