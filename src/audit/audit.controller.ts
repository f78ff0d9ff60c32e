import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, SessionOnly } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS, ORG_404, ORG_ADMINS_ONLY } from '../common/openapi.js';
import { QueryOf, UuidParam } from '../common/validation.js';
import { AuditService, type AuditEventRecord } from './audit.service.js';
import { AuditEventPageDto } from './dto/audit-event.dto.js';
import { ListAuditEventsQuery } from './dto/list-audit-events.query.js';

@ApiTags('orgs')
@Controller('orgs')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get(':org_id/audit-events')
  @SessionOnly()
  @ApiOperation({
    operationId: 'listAuditEvents',
    summary: "The org's audit log",
    description:
      'Browser session only; owners and admins of the org. Newest first, keyset-paginated; filters combine (all must hold).',
  })
  @ApiOkResponse({ type: AuditEventPageDto })
  @ApiErrors({
    400: 'org_id or a filter is malformed (the message names it): actor_id/target_id not a UUID, an unknown action, since/until not RFC 3339, limit outside 1 to 100, a cursor this service did not return.',
    ...AUTH_ERRORS,
    403: ORG_ADMINS_ONLY,
    404: ORG_404,
  })
  list(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @QueryOf(ListAuditEventsQuery) query: Readonly<ListAuditEventsQuery>,
  ): Promise<{ events: AuditEventRecord[]; next_cursor?: string }> {
    return this.audit.list(principal, orgId, query);
  }
}
