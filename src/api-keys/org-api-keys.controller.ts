import { Versioned } from '../versioning/operation-versioning.js';
import { Controller, Delete, Get, HttpCode, UseInterceptors } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { RequestOriginInterceptor } from '../audit/request-origin.interceptor.js';
import { CurrentPrincipal } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS, ORG_404, ORG_ADMINS_ONLY } from '../common/openapi.js';
import { QueryOf, UuidParam } from '../common/validation.js';
import { KeyLifecycle, NOT_CONFIGURED } from './api-keys.controller.js';
import { ApiKeysService } from './api-keys.service.js';
import type { OrgApiKeyRecord } from './api-key.record.js';
import { OrgApiKeyListDto } from './dto/api-key-record.dto.js';
import { ListOrgApiKeysQuery } from './dto/list-org-api-keys.query.js';

/** Org-admin oversight: every key bound to an org, whoever minted it. Owners and admins only. */
@ApiTags('orgs')
@UseInterceptors(RequestOriginInterceptor)
@Controller('orgs')
export class OrgApiKeysController {
  constructor(private readonly apiKeys: ApiKeysService) {}

  @Versioned('listOrgApiKeys')
  @Get(':org_id/api-keys')
  @KeyLifecycle()
  @ApiOperation({
    operationId: 'listOrgApiKeys',
    summary: 'Every key of an org (owners and admins)',
    description:
      "Browser session only. Every key bound to the org whoever minted it, with the owner's id and e-mail and whether they are still a member; newest first, keyset-paginated.",
  })
  @ApiOkResponse({ type: OrgApiKeyListDto })
  @ApiErrors({
    400: 'org_id or user_id is not a UUID, state is not one of active, revoked, expired, pending, denied, limit outside 1 to 100, or a cursor this service did not return.',
    ...AUTH_ERRORS,
    403: ORG_ADMINS_ONLY,
    404: ORG_404,
    501: NOT_CONFIGURED,
  })
  list(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @QueryOf(ListOrgApiKeysQuery) query: Readonly<ListOrgApiKeysQuery>,
  ): Promise<{ keys: OrgApiKeyRecord[]; next_cursor?: string }> {
    return this.apiKeys.listInOrg(principal, orgId, query);
  }

  @Delete(':org_id/api-keys/:keyID')
  @KeyLifecycle()
  @HttpCode(204)
  @ApiOperation({
    operationId: 'revokeOrgApiKey',
    summary: 'Revoke any key of an org (owners and admins)',
    description:
      'Browser session only. Revokes a key bound to the org, whoever minted it; recorded in the audit log with the admin as actor. Already revoked: 204, revoked_at unchanged.',
  })
  @ApiNoContentResponse({ description: 'Revoked.' })
  @ApiErrors({
    400: 'org_id or keyID is not a UUID.',
    ...AUTH_ERRORS,
    403: ORG_ADMINS_ONLY,
    404: `${ORG_404} Or: no such key in this org (a key of another org looks the same).`,
    501: NOT_CONFIGURED,
  })
  revoke(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('keyID') keyId: string,
  ): Promise<void> {
    return this.apiKeys.revokeInOrg(principal, orgId, keyId);
  }
}
