import { Versioned } from '../versioning/operation-versioning.js';
import { Body, Controller, Delete, Get, HttpCode, Post, UseGuards, UseInterceptors } from '@nestjs/common';
import {
  ApiBody,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { KeyLifecycle, NOT_CONFIGURED } from '../api-keys/api-keys.controller.js';
import { RotateApiKeyDto } from '../api-keys/dto/rotate-api-key.dto.js';
import { MintRateGuard } from '../api-keys/mint-rate.guard.js';
import { RequestOriginInterceptor } from '../audit/request-origin.interceptor.js';
import { CurrentPrincipal } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS, BODY_ERRORS, ORG_404, ORG_ADMINS_ONLY } from '../common/openapi.js';
import { QueryOf, StrictBodyPipe, UuidParam } from '../common/validation.js';
import { ListServiceKeysQuery } from './dto/list-service-keys.query.js';
import { MintServiceKeyDto } from './dto/mint-service-key.dto.js';
import { MintedServiceKeyDto, ServiceKeyListDto } from './dto/service-key.dto.js';
import { ServiceKeysService } from './service-keys.service.js';
import type { ServiceKeyRecord } from './service-key.record.js';

const KEY_404 = `${ORG_404} Or: no such service key in this org (a personal key, or another org's key, looks the same).`;
const HOST_DIRECTORY = `${NOT_CONFIGURED} Or: the deployment reads orgs and members from its host's directory (service keys need the built-in one).`;

/** Keys the org owns, held by its service account: any owner or admin of the org, browser session only. */
@ApiTags('service-keys')
@UseInterceptors(RequestOriginInterceptor)
@Controller('orgs/:org_id/service-keys')
export class ServiceKeysController {
  constructor(private readonly serviceKeys: ServiceKeysService) {}

  @Versioned('mintServiceKey')
  @Post()
  // Above KeyLifecycle: decorators apply bottom-up, and this guard must run after authentication.
  @UseGuards(MintRateGuard)
  @KeyLifecycle()
  @ApiOperation({
    operationId: 'mintServiceKey',
    summary: 'Mint a service key (owners and admins)',
    description:
      "Browser session only. A key the org owns, held by the org's service account: it keeps working when the admin who minted it leaves. " +
      'The full key is in this response and never again.',
  })
  @ApiBody({ type: MintServiceKeyDto })
  @ApiCreatedResponse({
    description: 'Created: the service key record including `key`, shown exactly once.',
    type: MintedServiceKeyDto,
  })
  @ApiErrors({
    400:
      'org_id is not a UUID, name over 100 characters, unknown scope, expires_in_days outside 0 to 366, a key setting outside its rules (the message names the field and the rule), ' +
      "an unknown field, or a body that is not a JSON object. Or: the org's key policy refuses the expiry (max_lifetime_days, require_expiry; the message names it).",
    ...AUTH_ERRORS,
    403: `${ORG_ADMINS_ONLY} Or: the requested scopes exceed the caller's role in the org, or what the org's key policy lets that role grant (allowed_scopes_by_role).`,
    404: ORG_404,
    409: 'The org already holds MAX_ACTIVE_SERVICE_KEYS_PER_ORG active service keys (default 100): revoke one first.',
    429: 'Too many mints by this user (MINT_RATE_LIMIT per minute, default 30), or too many failed authentications from this address; see Retry-After.',
    ...BODY_ERRORS,
    501: HOST_DIRECTORY,
  })
  mint(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @Body(new StrictBodyPipe(MintServiceKeyDto)) dto: Readonly<MintServiceKeyDto>,
  ): Promise<MintedServiceKeyDto> {
    return this.serviceKeys.mint(principal, orgId, dto);
  }

  @Versioned('listServiceKeys')
  @Get()
  @KeyLifecycle()
  @ApiOperation({
    operationId: 'listServiceKeys',
    summary: "The org's service keys (owners and admins)",
    description: 'Browser session only. Masked records, newest first, keyset-paginated.',
  })
  @ApiOkResponse({ type: ServiceKeyListDto })
  @ApiErrors({
    400: 'org_id is not a UUID, state is not active, revoked or expired, limit outside 1 to 100, or a cursor this service did not return.',
    ...AUTH_ERRORS,
    403: ORG_ADMINS_ONLY,
    404: ORG_404,
    501: HOST_DIRECTORY,
  })
  list(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @QueryOf(ListServiceKeysQuery) query: Readonly<ListServiceKeysQuery>,
  ): Promise<{ keys: ServiceKeyRecord[]; next_cursor?: string }> {
    return this.serviceKeys.list(principal, orgId, query);
  }

  @Versioned('rotateServiceKey')
  @Post(':keyID/rotate')
  @KeyLifecycle()
  @ApiOperation({
    operationId: 'rotateServiceKey',
    summary: 'Rotate a service key (owners and admins)',
    description:
      'Browser session only. Same id, name, scopes and expiry; a new secret shown in this response only; the replaced one verifies for grace_period_seconds (default 86400).',
  })
  @ApiBody({ type: RotateApiKeyDto, required: false })
  @ApiCreatedResponse({
    description: 'Rotated: the service key record including the new `key`, shown exactly once.',
    type: MintedServiceKeyDto,
  })
  @ApiErrors({
    400:
      'org_id or keyID is not a UUID, grace_period_seconds is not an integer from 0 to 604800, an unknown field, or a body that is not a JSON object. ' +
      "Or: the key has no expiry and the org's key policy requires one (max_lifetime_days or require_expiry).",
    ...AUTH_ERRORS,
    403: ORG_ADMINS_ONLY,
    404: KEY_404,
    409: 'The service key is revoked or expired: it cannot be rotated.',
    501: HOST_DIRECTORY,
  })
  rotate(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('keyID') keyId: string,
    @Body(new StrictBodyPipe(RotateApiKeyDto)) dto: Readonly<RotateApiKeyDto>,
  ): Promise<MintedServiceKeyDto> {
    return this.serviceKeys.rotate(principal, orgId, keyId, dto);
  }

  @Delete(':keyID')
  @KeyLifecycle()
  @HttpCode(204)
  @ApiOperation({
    operationId: 'revokeServiceKey',
    summary: 'Revoke a service key (owners and admins)',
    description: 'Browser session only. Soft revoke: it stops verifying at once and stays listed with revoked_at.',
  })
  @ApiNoContentResponse({ description: 'Revoked (already revoked: 204, revoked_at unchanged).' })
  @ApiErrors({
    400: 'org_id or keyID is not a UUID.',
    ...AUTH_ERRORS,
    403: ORG_ADMINS_ONLY,
    404: KEY_404,
    501: HOST_DIRECTORY,
  })
  revoke(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('keyID') keyId: string,
  ): Promise<void> {
    return this.serviceKeys.revoke(principal, orgId, keyId);
  }
}
