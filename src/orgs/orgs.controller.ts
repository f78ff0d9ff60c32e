import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, SessionOnly } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS, ORG_404, ORG_ADMINS_ONLY } from '../common/openapi.js';
import { PageQuery } from '../common/pagination.js';
import { QueryOf, UuidParam } from '../common/validation.js';
import { OrgListDto, OrgMemberListDto } from './dto/org.dto.js';
import { OrgsService, type MemberRecord, type OrgRecord } from './orgs.service.js';

const PAGE_ERRORS = 'limit outside 1 to 100, or a cursor this service did not return.';

@ApiTags('orgs')
@Controller('orgs')
export class OrgsController {
  constructor(private readonly orgs: OrgsService) {}

  @Get()
  @SessionOnly()
  @ApiOperation({
    operationId: 'listMyOrgs',
    summary: "The caller's orgs",
    description:
      'Browser session only. Every org the session’s user belongs to, with its name, plan and the user’s role; newest membership first, keyset-paginated.',
  })
  @ApiOkResponse({ type: OrgListDto })
  @ApiErrors({
    400: PAGE_ERRORS,
    ...AUTH_ERRORS,
    403: 'Called with an API key.',
    501: 'The deployment’s own org directory cannot list orgs.',
  })
  list(
    @CurrentPrincipal() principal: Principal,
    @QueryOf(PageQuery) query: Readonly<PageQuery>,
  ): Promise<{ orgs: OrgRecord[]; next_cursor?: string }> {
    return this.orgs.listMine(principal, query);
  }

  @Get(':org_id/members')
  @SessionOnly()
  @ApiOperation({
    operationId: 'listOrgMembers',
    summary: "An org's members",
    description: 'Browser session only; owners and admins of the org. Newest member first, keyset-paginated.',
  })
  @ApiOkResponse({ type: OrgMemberListDto })
  @ApiErrors({
    400: `org_id is not a UUID, ${PAGE_ERRORS}`,
    ...AUTH_ERRORS,
    403: ORG_ADMINS_ONLY,
    404: ORG_404,
    501: 'The deployment’s own org directory cannot list members.',
  })
  members(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @QueryOf(PageQuery) query: Readonly<PageQuery>,
  ): Promise<{ members: MemberRecord[]; next_cursor?: string }> {
    return this.orgs.members(principal, orgId, query);
  }
}
