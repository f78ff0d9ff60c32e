import { Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import { ScopeRegistry } from '../common/scope-registry.js';
import type { PrincipalDto } from './dto/principal.dto.js';
import type { ScopeListDto } from './dto/scope-list.dto.js';

/** What GET /me answers: the class that also validates and documents it (one class per shape). */
export type PrincipalView = PrincipalDto;

/** Who the caller is. Everything was verified and resolved by the guard in one round trip. */
@Injectable()
export class IdentityService {
  constructor(private readonly registry: ScopeRegistry) {}

  /** GET /scopes: every registered scope; `grantable` by the caller's role in its org. */
  scopes(principal: Principal): ScopeListDto {
    return {
      scopes: this.registry.names.map((scope) => ({
        scope,
        description: this.registry.describe(scope),
        grantable: this.registry.allows(principal.orgRole, scope),
      })),
    };
  }

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
