import { Controller, Get } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, RequireScopes } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS } from '../common/openapi.js';
import { QueryOf } from '../common/validation.js';
import { DayRangeQuery } from '../common/day-range.query.js';
import { DailyUsageReportDto } from './dto/daily-usage.dto.js';
import { UsageReportDto } from './dto/usage-report.dto.js';
import { UsageHistoryService, type DailyUsageReport } from './usage-history.service.js';
import { UsageService, type UsageReport } from './usage.service.js';

@ApiTags('usage')
@Controller('usage')
export class UsageController {
  constructor(
    private readonly usage: UsageService,
    private readonly history: UsageHistoryService,
  ) {}

  /** Plan and daily meters. Never charges anything. */
  @Get()
  @RequireScopes('decisions:read')
  @ApiOperation({
    operationId: 'getUsage',
    summary: 'Plan and daily meters',
    description:
      'Any credential holding decisions:read (a session or an API key). Never charges the query wallet. ' +
      'Each `used` is the counted use: every charge of the answering instance, and those of other instances ' +
      'up to their last write (at most a second behind when charging is leased); capacity an instance leased ' +
      'and has not spent is not shown as used.',
  })
  @ApiHeader({
    name: 'X-Org-Id',
    required: false,
    description: 'Sessions only: the org to report on when the session names none and the user has several.',
  })
  @ApiOkResponse({ description: 'The usage report.', type: UsageReportDto })
  @ApiErrors({
    400: 'X-Org-Id is not a UUID, or a session with no resolvable org: send the X-Org-Id header.',
    ...AUTH_ERRORS,
    403: 'The credential lacks the decisions:read scope.',
    404: "The session's org (org_id claim or X-Org-Id) does not exist or is not the user's.",
  })
  report(@CurrentPrincipal() principal: Principal): Promise<UsageReport> {
    return this.usage.report(principal);
  }

  /** One entry per UTC day of the org's history. */
  @Get('daily')
  @RequireScopes('decisions:read')
  @ApiOperation({
    operationId: 'getDailyUsage',
    summary: 'Daily usage history',
    description:
      'Any credential holding decisions:read. One entry per UTC day from `from` to `to` (at most 92), zeros for days without usage, each with the plan and limits that applied that day.',
  })
  @ApiHeader({
    name: 'X-Org-Id',
    required: false,
    description: 'Sessions only: the org to report on when the session names none and the user has several.',
  })
  @ApiOkResponse({ type: DailyUsageReportDto })
  @ApiErrors({
    400: 'from or to not a YYYY-MM-DD day, from after to, to after today, more than 92 days, from before the retention window; or a session with no resolvable org.',
    ...AUTH_ERRORS,
    403: 'The credential lacks the decisions:read scope.',
    404: "The session's org (org_id claim or X-Org-Id) does not exist or is not the user's.",
  })
  daily(
    @CurrentPrincipal() principal: Principal,
    @QueryOf(DayRangeQuery) query: Readonly<DayRangeQuery>,
  ): Promise<DailyUsageReport> {
    return this.history.orgDaily(principal, query);
  }
}
