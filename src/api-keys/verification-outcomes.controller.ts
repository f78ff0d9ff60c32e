import { Controller, Get } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { QueryOf, UuidParam } from '../common/validation.js';
import { VerificationOutcomesDto, VerificationOutcomesQuery } from './dto/verification-outcomes.dto.js';
import { KeyReportRoute } from './key-report-route.js';
import { VerificationOutcomesService } from './verification-outcomes.service.js';

const WHAT =
  'Per UTC hour or day, how many requests with the key were admitted (`valid`) and how many were refused, and why: revoked, expired, disabled, pending, outside its networks, rate limited, out of credits, over the org’s meter, or missing a scope.';
const RANGE =
  'from or to not a YYYY-MM-DD day, from after to, to after today, more than 92 days, from before the days kept (90 for hours, usage history for days), or granularity not hour or day';

/** What a key's verifications decided: its owner's route, the org admins' route, and the org's summary. */
@ApiTags('api-keys')
@Controller()
export class VerificationOutcomesController {
  constructor(private readonly outcomes: VerificationOutcomesService) {}

  @Get('api-keys/:keyID/verifications')
  @KeyReportRoute({
    audience: 'own key',
    operationId: 'getApiKeyVerifications',
    summary: 'What a key’s verifications decided',
    description: WHAT,
    badRequest: `keyID is not a UUID, or ${RANGE}.`,
    type: VerificationOutcomesDto,
  })
  ownKey(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('keyID') keyId: string,
    @QueryOf(VerificationOutcomesQuery) query: Readonly<VerificationOutcomesQuery>,
  ): Promise<VerificationOutcomesDto> {
    return this.outcomes.ownKey(principal, keyId, query);
  }

  @Get('orgs/:org_id/api-keys/:keyID/verifications')
  @KeyReportRoute({
    audience: 'org key',
    operationId: 'getOrgApiKeyVerifications',
    summary: 'What the verifications of a key of an org decided (owners and admins)',
    description: WHAT,
    badRequest: `org_id or keyID is not a UUID, or ${RANGE}.`,
    type: VerificationOutcomesDto,
  })
  orgKey(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('keyID') keyId: string,
    @QueryOf(VerificationOutcomesQuery) query: Readonly<VerificationOutcomesQuery>,
  ): Promise<VerificationOutcomesDto> {
    return this.outcomes.orgKey(principal, orgId, keyId, query);
  }

  @Get('orgs/:org_id/verifications')
  @KeyReportRoute({
    audience: 'org',
    operationId: 'getOrgVerifications',
    summary: 'What the verifications of all an org’s keys decided (owners and admins)',
    description: 'The same as for one key, summed over every key of the org, personal and service keys alike.',
    badRequest: `org_id is not a UUID, or ${RANGE}.`,
    type: VerificationOutcomesDto,
  })
  org(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @QueryOf(VerificationOutcomesQuery) query: Readonly<VerificationOutcomesQuery>,
  ): Promise<VerificationOutcomesDto> {
    return this.outcomes.org(principal, orgId, query);
  }
}
