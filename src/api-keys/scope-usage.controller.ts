import { Controller, Get } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { QueryOf, UuidParam } from '../common/validation.js';
import { ScopeUsageDto, ScopeUsageQuery } from './dto/scope-usage.dto.js';
import { KeyReportRoute } from './key-report-route.js';
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
  @KeyReportRoute({
    audience: 'own key',
    operationId: 'getApiKeyScopeUsage',
    summary: 'Which scopes a key used',
    description: WHAT,
    badRequest: BAD_QUERY,
    type: ScopeUsageDto,
  })
  ownKey(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('keyID') keyId: string,
    @QueryOf(ScopeUsageQuery) query: Readonly<ScopeUsageQuery>,
  ): Promise<ScopeUsageDto> {
    return this.usage.ownKey(principal, keyId, query.days);
  }

  @Get('orgs/:org_id/api-keys/:keyID/scope-usage')
  @KeyReportRoute({
    audience: 'org key',
    operationId: 'getOrgApiKeyScopeUsage',
    summary: 'Which scopes a key of an org used (owners and admins)',
    description: WHAT,
    badRequest: BAD_QUERY,
    type: ScopeUsageDto,
  })
  orgKey(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('keyID') keyId: string,
    @QueryOf(ScopeUsageQuery) query: Readonly<ScopeUsageQuery>,
  ): Promise<ScopeUsageDto> {
    return this.usage.orgKey(principal, orgId, keyId, query.days);
  }
}
