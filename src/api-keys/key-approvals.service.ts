import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { actorOf } from '../audit/audit.service.js';
import { requireOrgAdmin } from '../auth/org-access.js';
import type { Principal } from '../auth/principal.js';
import { ERRORS } from '../common/error-messages.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { keyEventData } from '../events/event-types.js';
import { Settings } from '../settings/settings.js';
import { ApiKeyPolicyRepository, type Decision } from './api-key-policy.repository.js';
import { KeyChanges } from './key-changes.js';

/**
 * Approval of keys the org's approval policy holds as pending: an owner or admin approves (the key
 * verifies from then on) or denies (it never verifies; it is revoked). A key of another org is a
 * 404 like a missing one; a key that is not pending is a 409.
 */
@Injectable()
export class KeyApprovalsService {
  constructor(
    private readonly changes: KeyChanges,
    private readonly keys: ApiKeyPolicyRepository,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
  ) {}

  approve(principal: Principal, orgId: string, keyId: string): Promise<void> {
    return this.decide(principal, orgId, keyId, 'approve');
  }

  deny(principal: Principal, orgId: string, keyId: string): Promise<void> {
    return this.decide(principal, orgId, keyId, 'deny');
  }

  private async decide(principal: Principal, orgId: string, keyId: string, decision: Decision): Promise<void> {
    await requireOrgAdmin(this.directory, principal, orgId);
    const at = this.settings.clock.now();
    const action = decision === 'approve' ? 'api_key.approved' : 'api_key.denied';
    const decided = await this.changes.decide({
      change: { orgId, keyId, decision, at },
      audit: (k) => ({
        orgId,
        action,
        ...actorOf(principal),
        target: { type: 'api_key', id: k.id },
        details: { name: k.name, lookup: k.lookup, owner_id: k.userId },
      }),
      event: (k) => ({ orgId, type: action, data: { ...keyEventData(k), decided_by: principal.userId }, at }),
    });
    if (decided) return;
    const standing = await this.keys.approvalOf(orgId, keyId);
    if (!standing) throw new NotFoundException(ERRORS.keyNotFound);
    throw new ConflictException(ERRORS.keyNotPending);
  }
}
