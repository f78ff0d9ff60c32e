import { Body, Controller, Get, Put, UseInterceptors } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { RequestOriginInterceptor } from '../audit/request-origin.interceptor.js';
import { CurrentPrincipal, SessionOnly } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS, BODY_ERRORS, ORG_404 } from '../common/openapi.js';
import { StrictBodyPipe, UuidParam } from '../common/validation.js';
import { KeyPolicyDto, KeyPolicyRecordDto } from './dto/key-policy.dto.js';
import { KeyPoliciesService } from './key-policies.service.js';

/** The org's key policy: owners set it, owners and admins read it; browser session only. */
@ApiTags('orgs')
@UseInterceptors(RequestOriginInterceptor)
@Controller('orgs')
export class KeyPoliciesController {
  constructor(private readonly policies: KeyPoliciesService) {}

  @Get(':org_id/key-policy')
  @SessionOnly()
  @ApiOperation({
    operationId: 'getKeyPolicy',
    summary: "The org's key policy (owners and admins)",
    description: 'Browser session only. Every field present; null or false: no such rule.',
  })
  @ApiOkResponse({ type: KeyPolicyRecordDto })
  @ApiErrors({
    400: 'org_id is not a UUID.',
    ...AUTH_ERRORS,
    403: 'Called with an API key, or the caller is a member or viewer of the org.',
    404: ORG_404,
  })
  get(@CurrentPrincipal() principal: Principal, @UuidParam('org_id') orgId: string): Promise<KeyPolicyRecordDto> {
    return this.policies.get(principal, orgId);
  }

  @Put(':org_id/key-policy')
  @SessionOnly()
  @ApiOperation({
    operationId: 'putKeyPolicy',
    summary: "Set the org's key policy (owners)",
    description:
      'Browser session only. Replaces the whole policy. Answers once every instance applies it: keys that outlive a new lifetime limit stop verifying at that limit from their creation (announced first as `api_key.expiring`).',
  })
  @ApiBody({ type: KeyPolicyDto })
  @ApiOkResponse({ type: KeyPolicyRecordDto, description: 'The policy as set.' })
  @ApiErrors({
    400: 'org_id is not a UUID, an unknown field, max_lifetime_days outside 1 to 366, stale_after_days outside 30 to 730, an unknown scope or role, or a scope a role cannot hold.',
    ...AUTH_ERRORS,
    403: 'Called with an API key, or the caller is not an owner of the org.',
    404: ORG_404,
    ...BODY_ERRORS,
  })
  put(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @Body(new StrictBodyPipe(KeyPolicyDto)) dto: Readonly<KeyPolicyDto>,
  ): Promise<KeyPolicyRecordDto> {
    return this.policies.put(principal, orgId, dto);
  }
}
