import { BadRequestException, ForbiddenException, Injectable } from '@nestjs/common';
import { KeyChanges } from '../api-keys/key-changes.js';
import { actorOf, OPERATOR, type ChangeActor } from '../audit/audit.service.js';
import { requireOrgAdmin } from '../auth/org-access.js';
import type { Principal } from '../auth/principal.js';
import { ERRORS } from '../common/error-messages.js';
import { ROLES } from '../common/roles.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { keyEventData } from '../events/event-types.js';
import { Settings } from '../settings/settings.js';
import type { KeyPolicyDto, KeyPolicyRecordDto } from './dto/key-policy.dto.js';
import type { OrgKeyPolicyEntity } from './key-policy.entity.js';
import { KeyPolicyRepository } from './key-policy.repository.js';

function toRecord(p: OrgKeyPolicyEntity | null): KeyPolicyRecordDto {
  const record: KeyPolicyRecordDto = {
    max_lifetime_days: p?.maxLifetimeDays ?? null,
    require_expiry: p?.requireExpiry ?? false,
    stale_after_days: p?.staleAfterDays ?? null,
    allowed_scopes_by_role: p?.allowedScopesByRole ?? null,
    approval_required_for: p?.approvalRequiredFor ?? null,
  };
  if (p) record.updated_at = p.updatedAt.toISOString();
  return record;
}

/**
 * The org's key policy: owners set it (PUT replaces it whole), owners and admins read it. Setting
 * it is one unit of work with the keys it shortens (KeyChanges.applyPolicy), which answers only
 * once every instance has applied it.
 */
@Injectable()
export class KeyPoliciesService {
  constructor(
    private readonly policies: KeyPolicyRepository,
    private readonly changes: KeyChanges,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
  ) {}

  async get(principal: Principal, orgId: string): Promise<KeyPolicyRecordDto> {
    await requireOrgAdmin(this.directory, principal, orgId);
    return toRecord(await this.policies.find(orgId));
  }

  async put(principal: Principal, orgId: string, dto: KeyPolicyDto): Promise<KeyPolicyRecordDto> {
    const standing = await requireOrgAdmin(this.directory, principal, orgId);
    if (standing.role !== 'owner') throw new ForbiddenException(ERRORS.policyOwnersOnly);
    return this.apply(actorOf(principal), principal.userId, orgId, dto);
  }

  /** The operator CLI (`org key-policy`): any org's policy; null for no such org. */
  async getAsOperator(orgId: string): Promise<KeyPolicyRecordDto | null> {
    if ((await this.directory.orgPlan(orgId)) === null) return null;
    return toRecord(await this.policies.find(orgId));
  }

  /**
   * The operator CLI (`org set-key-policy`): the rules given replace those rules, the others stay
   * as set; applied as PUT applies it, audited with the CLI as actor. Null for no such org.
   */
  async changeAsOperator(orgId: string, rules: KeyPolicyDto): Promise<KeyPolicyRecordDto | null> {
    const current = await this.getAsOperator(orgId);
    if (!current) return null;
    const { updated_at: _updatedAt, ...kept } = current;
    return this.apply(OPERATOR, null, orgId, { ...kept, ...rules });
  }

  private async apply(
    actor: ChangeActor,
    updatedBy: string | null,
    orgId: string,
    dto: KeyPolicyDto,
  ): Promise<KeyPolicyRecordDto> {
    const byRole = dto.allowed_scopes_by_role ? { ...dto.allowed_scopes_by_role } : null;
    const registry = this.settings.scopes;
    for (const role of ROLES) registry.requireRegistered(`allowed_scopes_by_role.${role}`, byRole?.[role]);
    registry.requireRegistered('approval_required_for', dto.approval_required_for);
    for (const role of ROLES) {
      const above = byRole?.[role]?.find((s) => !registry.allows(role, s));
      if (above) throw new BadRequestException(ERRORS.policyScopeAboveRole(role, above));
    }
    const now = this.settings.clock.now();
    const held =
      dto.approval_required_for && dto.approval_required_for.length > 0
        ? [...new Set(dto.approval_required_for)]
        : null;
    const policy: OrgKeyPolicyEntity = {
      orgId,
      maxLifetimeDays: dto.max_lifetime_days ?? null,
      requireExpiry: dto.require_expiry ?? false,
      staleAfterDays: dto.stale_after_days ?? null,
      allowedScopesByRole: byRole,
      approvalRequiredFor: held,
      updatedAt: now,
      updatedBy,
    };
    let saved: OrgKeyPolicyEntity = policy;
    const record = toRecord(policy);
    await this.changes.applyPolicy({
      policy: async (manager) => void (saved = await this.policies.save(policy, manager)),
      change: { orgId, maxLifetimeDays: policy.maxLifetimeDays, now },
      audit: (shortened) => ({
        orgId,
        action: 'org.key_policy_updated',
        ...actor,
        target: { type: 'org', id: orgId },
        details: { ...record, updated_at: undefined, keys_shortened: shortened.length },
      }),
      // Keys the limit cuts short are told first; a key already past it stops at once (and the expiry scan announces it).
      events: (shortened) =>
        shortened
          .filter((k) => k.expiresAt && k.expiresAt.getTime() > now.getTime())
          .map((k) => ({
            orgId,
            type: 'api_key.expiring' as const,
            data: { ...keyEventData(k), reason: 'key_policy' },
            at: now,
          })),
    });
    return toRecord(saved);
  }
}
