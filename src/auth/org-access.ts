import { ForbiddenException, NotFoundException } from '@nestjs/common';
import type { Role } from '../common/roles.js';
import type { MemberContext, OrgDirectory } from '../directory/org-directory.js';
import type { Principal } from './principal.js';
import { ERRORS } from '../common/error-messages.js';

/** Roles that oversee an org: its members, their keys and its audit log. */
export const ORG_ADMIN_ROLES: readonly Role[] = ['owner', 'admin'];

/**
 * The caller's standing in an org they must administer: 404 (the same answer as for a missing
 * org) when they are not a member, 403 when they are a member or viewer.
 */
export async function requireOrgAdmin(
  directory: OrgDirectory,
  principal: Principal,
  orgId: string,
): Promise<MemberContext> {
  const [standing] = await directory.userOrgs(principal.userId, orgId, 1);
  if (!standing) throw new NotFoundException(ERRORS.orgNotFound);
  if (!ORG_ADMIN_ROLES.includes(standing.role)) throw new ForbiddenException(ERRORS.orgAdminRequired);
  return standing;
}
