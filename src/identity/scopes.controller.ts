import { Controller, Get } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Authenticated, CurrentPrincipal } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS } from '../common/openapi.js';
import { ScopeListDto } from './dto/scope-list.dto.js';
import { IdentityService } from './identity.service.js';

@ApiTags('identity')
@Controller('scopes')
export class ScopesController {
  constructor(private readonly identity: IdentityService) {}

  @Get()
  @Authenticated()
  @ApiOperation({
    operationId: 'listScopes',
    summary: "The deployment's scopes",
    description:
      "Any authenticated caller (a session or an API key). Every registered scope with its description, and whether the caller's role in its org may grant it.",
  })
  @ApiHeader({
    name: 'X-Org-Id',
    required: false,
    description: 'Sessions only: the org whose role decides `grantable`, when the session names none.',
  })
  @ApiOkResponse({ description: 'The registered scopes.', type: ScopeListDto })
  @ApiErrors({
    400: 'X-Org-Id is not a UUID.',
    ...AUTH_ERRORS,
    404: "The session's org (org_id claim or X-Org-Id) does not exist or is not the user's.",
  })
  list(@CurrentPrincipal() principal: Principal): ScopeListDto {
    return this.identity.scopes(principal);
  }
}
