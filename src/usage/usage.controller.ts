import { Controller, Get } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, RequireScopes } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS } from '../common/openapi.js';
import { UsageReportDto } from './dto/usage-report.dto.js';
import { UsageService, type UsageReport } from './usage.service.js';

@ApiTags('usage')
@Controller('usage')
export class UsageController {
  constructor(private readonly usage: UsageService) {}

  /** Plan and daily meters. Never charges anything. */
  @Get()
  @RequireScopes('decisions:read')
  @ApiOperation({ operationId: 'getUsage', summary: 'Plan and daily meters', description: 'Any credential holding decisions:read (a session or an API key). Never charges the query wallet.' })
  @ApiHeader({ name: 'X-Org-Id', required: false, description: 'Sessions only: the org to report on when the session names none and the user has several.' })
  @ApiOkResponse({ description: 'The usage report.', type: UsageReportDto })
  @ApiErrors({
    400: 'A session with no resolvable org: send the X-Org-Id header.',
    ...AUTH_ERRORS,
    403: 'The credential lacks the decisions:read scope.',
    404: "The session's org (org_id claim or X-Org-Id) does not exist or is not the user's.",
  })
  report(@CurrentPrincipal() principal: Principal): Promise<UsageReport> {
    return this.usage.report(principal);
  }
}
