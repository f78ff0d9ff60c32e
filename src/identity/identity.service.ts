import { Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import type { Role, Scope } from '../common/roles.js';

export interface PrincipalView {
  user_id: string;
  org_id: string | null;
  email: string;
  scopes: Scope[];
  org_role: Role | null;
  org_member_count: number;
}

/** Who the caller is. Everything was verified and resolved by the guard in one round trip. */
@Injectable()
export class IdentityService {
  describe(principal: Principal): PrincipalView {
    return {
      user_id: principal.userId,
      org_id: principal.orgId,
      email: principal.email,
      scopes: principal.scopes,
      org_role: principal.orgRole,
      org_member_count: principal.orgMemberCount,
    };
  }
}
