import { BadRequestException, ForbiddenException, Injectable } from '@nestjs/common';
import { KeyPolicyPort, type PolicyMintRequest } from '../api-keys/key-policy.port.js';
import { ERRORS } from '../common/error-messages.js';
import type { Role } from '../common/roles.js';
import { KeyPolicyRepository } from './key-policy.repository.js';

/** Roles whose mints the approval policy holds for approval (owners and admins approve, so theirs never wait). */
const APPROVAL_ROLES: readonly Role[] = ['member', 'viewer'];

/** The org's key policy as the key feature's port: what a mint or rotation may ask for. */
@Injectable()
export class KeyPolicyRules extends KeyPolicyPort {
  constructor(private readonly policies: KeyPolicyRepository) {
    super();
  }

  async judgeMint({ orgId, role, scopes, expiresInDays }: PolicyMintRequest): Promise<{ pending: boolean }> {
    const policy = await this.policies.find(orgId);
    if (!policy) return { pending: false };
    const allowed = policy.allowedScopesByRole?.[role];
    if (allowed) {
      const above = scopes.filter((s) => !allowed.includes(s));
      if (above.length > 0) throw new ForbiddenException(ERRORS.policyScopesByRole(role, above, allowed));
    }
    if (policy.maxLifetimeDays !== null && (expiresInDays === 0 || expiresInDays > policy.maxLifetimeDays)) {
      throw new BadRequestException(ERRORS.policyMaxLifetime(policy.maxLifetimeDays));
    }
    if (policy.requireExpiry && expiresInDays === 0) throw new BadRequestException(ERRORS.policyRequiresExpiry);
    const held = policy.approvalRequiredFor ?? [];
    return { pending: APPROVAL_ROLES.includes(role) && scopes.some((s) => held.includes(s)) };
  }

  async judgeRotation(orgId: string, expiresAt: Date | null): Promise<void> {
    if (expiresAt) return;
    const policy = await this.policies.find(orgId);
    if (policy && (policy.requireExpiry || policy.maxLifetimeDays !== null))
      throw new BadRequestException(ERRORS.policyRotationNeedsExpiry);
  }
}
