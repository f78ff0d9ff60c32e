import { Controller, Get } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Authenticated, CurrentPrincipal } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS } from '../common/openapi.js';
import { PrincipalDto } from './dto/principal.dto.js';
import { IdentityService, type PrincipalView } from './identity.service.js';

@ApiTags('identity')
@Controller('me')
export class IdentityController {
  constructor(private readonly identity: IdentityService) {}

  @Get()
  @Authenticated()
  @ApiOperation({
    operationId: 'getMe',
    summary: 'Caller identity',
    description: 'Any authenticated caller (a session or an API key); no scope required. Proves a credential works.',
  })
  @ApiHeader({
    name: 'X-Org-Id',
    required: false,
    description: 'Sessions only: the org to describe when the session names none and the user has several.',
  })
  @ApiOkResponse({ description: 'The verified principal.', type: PrincipalDto })
  @ApiErrors({
    400: 'X-Org-Id is not a UUID.',
    ...AUTH_ERRORS,
    404: "The session's org (org_id claim or X-Org-Id) does not exist or is not the user's.",
  })
  me(@CurrentPrincipal() principal: Principal): PrincipalView {
    return this.identity.describe(principal);
  }
}
