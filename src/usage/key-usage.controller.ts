import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, SessionOnly } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS, ORG_ADMINS_ONLY } from '../common/openapi.js';
import { QueryOf, UuidParam } from '../common/validation.js';
import { DayRangeQuery } from '../common/day-range.query.js';
import { KeyDailyUsageReportDto } from './dto/daily-usage.dto.js';
import { UsageHistoryService, type KeyDailyUsageReport } from './usage-history.service.js';

const RANGE_ERRORS =
  'from or to not a YYYY-MM-DD day, from after to, to after today, more than 92 days, or from before the retention window';

@ApiTags('usage')
@Controller('api-keys')
export class ApiKeyUsageController {
  constructor(private readonly history: UsageHistoryService) {}

  @Get(':keyID/usage')
  @SessionOnly()
  @ApiOperation({
    operationId: 'getApiKeyUsage',
    summary: 'Daily usage of one of your keys',
    description: 'Browser session only. What the key charged per UTC day (zeros included).',
  })
  @ApiOkResponse({ type: KeyDailyUsageReportDto })
  @ApiErrors({
    400: `keyID is not a UUID, or ${RANGE_ERRORS}.`,
    ...AUTH_ERRORS,
    403: 'Called with an API key: this route needs a browser session.',
    404: "No such key, or not the caller's; both cases look identical.",
  })
  keyUsage(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('keyID') keyId: string,
    @QueryOf(DayRangeQuery) query: Readonly<DayRangeQuery>,
  ): Promise<KeyDailyUsageReport> {
    return this.history.ownKeyDaily(principal, keyId, query);
  }
}

/** The org-admin view of a key's usage; its own role check, beside the other /orgs routes. */
@ApiTags('usage')
@Controller('orgs')
export class OrgKeyUsageController {
  constructor(private readonly history: UsageHistoryService) {}

  @Get(':org_id/api-keys/:keyID/usage')
  @SessionOnly()
  @ApiOperation({
    operationId: 'getOrgApiKeyUsage',
    summary: 'Daily usage of any key of an org',
    description: 'Browser session of an owner or admin of the org.',
  })
  @ApiOkResponse({ type: KeyDailyUsageReportDto })
  @ApiErrors({
    400: `org_id or keyID is not a UUID, or ${RANGE_ERRORS}.`,
    ...AUTH_ERRORS,
    403: ORG_ADMINS_ONLY,
    404: 'The org does not exist or the caller is not in it; or no such key in this org.',
  })
  keyUsage(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('keyID') keyId: string,
    @QueryOf(DayRangeQuery) query: Readonly<DayRangeQuery>,
  ): Promise<KeyDailyUsageReport> {
    return this.history.orgKeyDaily(principal, orgId, keyId, query);
  }
}
