import { Controller, Get, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS } from '../common/openapi.js';
import { QueryOf, UuidParamPipe } from '../common/validation.js';
import { KeyLifecycle, NOT_CONFIGURED, SESSION_REQUIRED } from './api-keys.controller.js';
import { ScopeUsageDto, ScopeUsageQuery } from './dto/scope-usage.dto.js';
import { ScopeUsageService } from './scope-usage.service.js';

const WHAT =
  'Per scope the key holds, the requests it made on routes that required it in the last `days` UTC days, and the scopes it did not use: what `PATCH` with `scopes` could take away.';
const BAD_QUERY = 'keyID (or org_id) is not a UUID; days is not an integer from 1 to 90.';

/** Which scopes a key really used: its owner's route and the org admins' route. */
@ApiTags('api-keys')
@Controller()
export class ScopeUsageController {
  constructor(private readonly usage: ScopeUsageService) {}

  @Get('api-keys/:keyID/scope-usage')
  @KeyLifecycle()
  @ApiOperation({
    operationId: 'getApiKeyScopeUsage',
    summary: 'Which scopes a key used',
    description: `Browser session only, your own key. ${WHAT}`,
  })
  @ApiParam({ name: 'keyID', format: 'uuid' })
  @ApiOkResponse({ type: ScopeUsageDto })
  @ApiErrors({
    400: BAD_QUERY,
    ...AUTH_ERRORS,
    403: SESSION_REQUIRED,
    404: "No such key, or not the caller's; both cases look identical.",
    501: NOT_CONFIGURED,
  })
  ownKey(
    @CurrentPrincipal() principal: Principal,
    @Param('keyID', new UuidParamPipe('keyID')) keyId: string,
    @QueryOf(ScopeUsageQuery) query: Readonly<ScopeUsageQuery>,
  ): Promise<ScopeUsageDto> {
    return this.usage.ownKey(principal, keyId, query.days);
  }

  @Get('orgs/:org_id/api-keys/:keyID/scope-usage')
  @KeyLifecycle()
  @ApiTags('orgs')
  @ApiOperation({
    operationId: 'getOrgApiKeyScopeUsage',
    summary: 'Which scopes a key of an org used (owners and admins)',
    description: `Browser session only. ${WHAT}`,
  })
  @ApiParam({ name: 'org_id', format: 'uuid' })
  @ApiParam({ name: 'keyID', format: 'uuid' })
  @ApiOkResponse({ type: ScopeUsageDto })
  @ApiErrors({
    400: BAD_QUERY,
    ...AUTH_ERRORS,
    403: 'Called with an API key, or the caller is a member or viewer of the org (owners and admins only).',
    404: 'The org does not exist or the caller is not a member; or no such key in this org.',
    501: NOT_CONFIGURED,
  })
  orgKey(
    @CurrentPrincipal() principal: Principal,
    @Param('org_id', new UuidParamPipe('org_id')) orgId: string,
    @Param('keyID', new UuidParamPipe('keyID')) keyId: string,
    @QueryOf(ScopeUsageQuery) query: Readonly<ScopeUsageQuery>,
  ): Promise<ScopeUsageDto> {
    return this.usage.orgKey(principal, orgId, keyId, query.days);
  }
}
