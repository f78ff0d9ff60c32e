import { Controller, HttpCode, Post, UseInterceptors } from '@nestjs/common';
import { ApiNoContentResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { RequestOriginInterceptor } from '../audit/request-origin.interceptor.js';
import { CurrentPrincipal } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS, ORG_ADMINS_ONLY } from '../common/openapi.js';
import { UuidParam } from '../common/validation.js';
import { KeyLifecycle, NOT_CONFIGURED } from './api-keys.controller.js';
import { KeyApprovalsService } from './key-approvals.service.js';

const ERRORS_OF_DECISION = {
  400: 'org_id or keyID is not a UUID.',
  ...AUTH_ERRORS,
  403: ORG_ADMINS_ONLY,
  404: 'The org does not exist or the caller is not a member, or no such key in this org (a key of another org looks the same).',
  409: 'The key is not pending: already approved, denied or revoked, or never held for approval.',
  501: NOT_CONFIGURED,
};

/** Keys held for approval by the org's key policy: owners and admins approve or deny them. */
@ApiTags('orgs')
@UseInterceptors(RequestOriginInterceptor)
@Controller('orgs')
export class KeyApprovalsController {
  constructor(private readonly approvals: KeyApprovalsService) {}

  @Post(':org_id/api-keys/:keyID/approve')
  @KeyLifecycle()
  @HttpCode(204)
  @ApiOperation({
    operationId: 'approveOrgApiKey',
    summary: 'Approve a pending key (owners and admins)',
    description:
      'Browser session only. The key verifies from now on; its record loses `status`. Audited, and announced as `api_key.approved`.',
  })
  @ApiNoContentResponse({ description: 'Approved.' })
  @ApiErrors(ERRORS_OF_DECISION)
  approve(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('keyID') keyId: string,
  ): Promise<void> {
    return this.approvals.approve(principal, orgId, keyId);
  }

  @Post(':org_id/api-keys/:keyID/deny')
  @KeyLifecycle()
  @HttpCode(204)
  @ApiOperation({
    operationId: 'denyOrgApiKey',
    summary: 'Deny a pending key (owners and admins)',
    description:
      'Browser session only. The key never verifies: it is revoked and its record says `"status": "denied"`. Audited, and announced as `api_key.denied`.',
  })
  @ApiNoContentResponse({ description: 'Denied.' })
  @ApiErrors(ERRORS_OF_DECISION)
  deny(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('keyID') keyId: string,
  ): Promise<void> {
    return this.approvals.deny(principal, orgId, keyId);
  }
}
