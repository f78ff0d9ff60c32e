import { Controller, Get, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS } from '../common/openapi.js';
import { QueryOf, UuidParamPipe } from '../common/validation.js';
import { KeyLifecycle, NOT_CONFIGURED, SESSION_REQUIRED } from './api-keys.controller.js';
import { VerificationOutcomesDto, VerificationOutcomesQuery } from './dto/verification-outcomes.dto.js';
import { VerificationOutcomesService } from './verification-outcomes.service.js';

const WHAT =
  'Per UTC hour or day, how many requests with the key were admitted (`valid`) and how many were refused, and why: revoked, expired, disabled, pending, outside its networks, rate limited, out of credits, over the org’s meter, or missing a scope.';
const RANGE =
  'from or to not a YYYY-MM-DD day, from after to, to after today, more than 92 days, from before the days kept (90 for hours, usage history for days), or granularity not hour or day';
const ORG_ADMINS = 'Called with an API key, or the caller is a member or viewer of the org (owners and admins only).';

/** What a key's verifications decided: its owner's route, the org admins' route, and the org's summary. */
@ApiTags('api-keys')
@Controller()
export class VerificationOutcomesController {
  constructor(private readonly outcomes: VerificationOutcomesService) {}

  @Get('api-keys/:keyID/verifications')
  @KeyLifecycle()
  @ApiOperation({
    operationId: 'getApiKeyVerifications',
    summary: 'What a key’s verifications decided',
    description: `Browser session only, your own key. ${WHAT}`,
  })
  @ApiParam({ name: 'keyID', format: 'uuid' })
  @ApiOkResponse({ type: VerificationOutcomesDto })
  @ApiErrors({
    400: `keyID is not a UUID, or ${RANGE}.`,
    ...AUTH_ERRORS,
    403: SESSION_REQUIRED,
    404: "No such key, or not the caller's; both cases look identical.",
    501: NOT_CONFIGURED,
  })
  ownKey(
    @CurrentPrincipal() principal: Principal,
    @Param('keyID', new UuidParamPipe('keyID')) keyId: string,
    @QueryOf(VerificationOutcomesQuery) query: Readonly<VerificationOutcomesQuery>,
  ): Promise<VerificationOutcomesDto> {
    return this.outcomes.ownKey(principal, keyId, query);
  }

  @Get('orgs/:org_id/api-keys/:keyID/verifications')
  @KeyLifecycle()
  @ApiTags('orgs')
  @ApiOperation({
    operationId: 'getOrgApiKeyVerifications',
    summary: 'What the verifications of a key of an org decided (owners and admins)',
    description: `Browser session only. ${WHAT}`,
  })
  @ApiParam({ name: 'org_id', format: 'uuid' })
  @ApiParam({ name: 'keyID', format: 'uuid' })
  @ApiOkResponse({ type: VerificationOutcomesDto })
  @ApiErrors({
    400: `org_id or keyID is not a UUID, or ${RANGE}.`,
    ...AUTH_ERRORS,
    403: ORG_ADMINS,
    404: 'The org does not exist or the caller is not a member; or no such key in this org.',
    501: NOT_CONFIGURED,
  })
  orgKey(
    @CurrentPrincipal() principal: Principal,
    @Param('org_id', new UuidParamPipe('org_id')) orgId: string,
    @Param('keyID', new UuidParamPipe('keyID')) keyId: string,
    @QueryOf(VerificationOutcomesQuery) query: Readonly<VerificationOutcomesQuery>,
  ): Promise<VerificationOutcomesDto> {
    return this.outcomes.orgKey(principal, orgId, keyId, query);
  }

  @Get('orgs/:org_id/verifications')
  @KeyLifecycle()
  @ApiTags('orgs')
  @ApiOperation({
    operationId: 'getOrgVerifications',
    summary: 'What the verifications of all an org’s keys decided (owners and admins)',
    description: `Browser session only. The same as for one key, summed over every key of the org, personal and service keys alike.`,
  })
  @ApiParam({ name: 'org_id', format: 'uuid' })
  @ApiOkResponse({ type: VerificationOutcomesDto })
  @ApiErrors({
    400: `org_id is not a UUID, or ${RANGE}.`,
    ...AUTH_ERRORS,
    403: ORG_ADMINS,
    404: 'The org does not exist or the caller is not a member; both cases look identical.',
    501: NOT_CONFIGURED,
  })
  org(
    @CurrentPrincipal() principal: Principal,
    @Param('org_id', new UuidParamPipe('org_id')) orgId: string,
    @QueryOf(VerificationOutcomesQuery) query: Readonly<VerificationOutcomesQuery>,
  ): Promise<VerificationOutcomesDto> {
    return this.outcomes.org(principal, orgId, query);
  }
}
