import { Injectable, NotFoundException } from '@nestjs/common';
import { roleCeiling } from '../common/roles.js';
import { OrgDirectory } from '../directory/org-directory.js';
import type { Principal } from './principal.js';

export const ORG_NOT_FOUND = 'Organisation not found';

/**
 * The org a session operates in: the `org_id` claim, else `X-Org-Id`, else the user's only org.
 * A named org the user is not in looks exactly like a missing one (404).
 */
@Injectable()
export class SessionOrgResolver {
  constructor(private readonly directory: OrgDirectory) {}

  async resolve(principal: Principal): Promise<void> {
    const requested = principal.requestedOrgId ?? null;
    const orgs = await this.directory.userOrgs(principal.userId, requested, 2);
    if (requested && orgs.length === 0) throw new NotFoundException(ORG_NOT_FOUND);
    if (orgs.length !== 1) return;
    const [org] = orgs;
    principal.orgId = org.orgId;
    principal.orgRole = org.role;
    principal.orgMemberCount = org.memberCount;
    principal.plan = org.plan;
    principal.scopes = roleCeiling(org.role);
  }
}
