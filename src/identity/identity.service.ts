import { Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import type { PrincipalDto } from './dto/principal.dto.js';

/** What GET /me answers: the class that also validates and documents it (one class per shape). */
export type PrincipalView = PrincipalDto;

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
