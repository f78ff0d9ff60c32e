import { Versioned } from '../versioning/operation-versioning.js';
import {
  applyDecorators,
  Body,
  Controller,
  Delete,
  Get,
  Header,
  HttpCode,
  Post,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import {
  ApiBody,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { CurrentPrincipal, SessionOnly } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS, BODY_ERRORS } from '../common/openapi.js';
import { QueryOf, StrictBodyPipe, UuidParam } from '../common/validation.js';
import { RequestOriginInterceptor } from '../audit/request-origin.interceptor.js';
import { ApiKeysEnabledGuard } from './api-keys-enabled.guard.js';
import { ApiKeysService } from './api-keys.service.js';
import { MintRateGuard } from './mint-rate.guard.js';
import type { ApiKeyRecord, MintedApiKey } from './api-key.record.js';
import { ApiKeyListDto, MintedApiKeyDto, RotatedApiKeyDto } from './dto/api-key-record.dto.js';
import { RotateApiKeyDto } from './dto/rotate-api-key.dto.js';
import { MintApiKeyDto } from './dto/mint-api-key.dto.js';
import { ListApiKeysQuery } from './dto/list-api-keys.query.js';

/**
 * Key lifecycle: a browser session only, then 501 when keys are not configured. `no-store` is set
 * here too (not only by the standalone app) so a minted key is never cached inside a host either.
 */
export const KeyLifecycle = () =>
  applyDecorators(SessionOnly(), UseGuards(ApiKeysEnabledGuard), Header('Cache-Control', 'no-store'));

export const SESSION_REQUIRED = 'Called with an API key: key lifecycle needs a browser session.';
export const NOT_CONFIGURED = 'API keys are not configured on this deployment (API_KEY_SECRET unset).';

@ApiTags('api-keys')
@UseInterceptors(RequestOriginInterceptor)
@Controller('api-keys')
export class ApiKeysController {
  constructor(private readonly apiKeys: ApiKeysService) {}

  @Versioned('mintApiKey')
  @Post()
  // Above KeyLifecycle: decorators apply bottom-up, and this guard must run after authentication.
  @UseGuards(MintRateGuard)
  @KeyLifecycle()
  @ApiOperation({
    operationId: 'mintApiKey',
    summary: 'Mint a key',
    description: 'Browser session only. The full key is in this response and never again.',
  })
  @ApiBody({ type: MintApiKeyDto })
  @ApiCreatedResponse({
    description: 'Created: the key record including `key`, shown exactly once.',
    type: MintedApiKeyDto,
  })
  @ApiErrors({
    400: 'org_id missing or not a UUID, name over 100 characters, unknown scope, expires_in_days outside 0 to 366, a key setting outside its rules (the message names the field and the rule), an unknown field, or a body that is not a JSON object.',
    ...AUTH_ERRORS,
    403: `${SESSION_REQUIRED} Or: the requested scopes exceed the caller's role in the org.`,
    404: "The org does not exist or is not the caller's; both cases look identical.",
    409: 'The caller has no workspace in this org yet (a repository must be connected first); or already holds MAX_ACTIVE_KEYS_PER_USER_ORG active keys in it (default 100): revoke one first.',
    429: 'Too many mints by this user (MINT_RATE_LIMIT per minute, default 30), or too many failed authentications from this address (AUTH_FAILURE_LIMIT); see Retry-After.',
    ...BODY_ERRORS,
    501: NOT_CONFIGURED,
  })
  // Readonly<…> parameter types (not classes) keep a host's global ValidationPipe off our
  // parameters; our own pipes (StrictBodyPipe) name the DTO classes.
  mint(
    @CurrentPrincipal() principal: Principal,
    @Body(new StrictBodyPipe(MintApiKeyDto)) dto: Readonly<MintApiKeyDto>,
  ): Promise<MintedApiKey> {
    return this.apiKeys.mint(principal, dto);
  }

  @Versioned('listApiKeys')
  @Get()
  @KeyLifecycle()
  @ApiOperation({
    operationId: 'listApiKeys',
    summary: 'List keys',
    description: 'Browser session only. Masked records: the full key is never listable.',
  })
  @ApiOkResponse({
    description:
      "One page of the caller's keys, newest first; revoked and expired keys included unless `state` filters them. `next_cursor` is null on the last page (API version 2026-11-01: present only when more keys exist).",
    type: ApiKeyListDto,
  })
  @ApiErrors({
    400: 'org_id filter is not a UUID, state is not one of the key states, limit is not an integer from 1 to 100, or cursor is not one this service returned.',
    ...AUTH_ERRORS,
    403: SESSION_REQUIRED,
    404: "The org_id filter names an org that does not exist or is not the caller's.",
    501: NOT_CONFIGURED,
  })
  list(
    @CurrentPrincipal() principal: Principal,
    @QueryOf(ListApiKeysQuery) query: Readonly<ListApiKeysQuery>,
  ): Promise<{ keys: ApiKeyRecord[]; next_cursor: string | null }> {
    return this.apiKeys.list(principal, {
      orgId: query.org_id ?? null,
      state: query.state ?? null,
      limit: query.limit,
      cursor: query.cursor,
    });
  }

  @Versioned('rotateApiKey')
  @Post(':keyID/rotate')
  @KeyLifecycle()
  @ApiOperation({
    operationId: 'rotateApiKey',
    summary: 'Rotate a key',
    description:
      'Browser session only, your own key. Same id, name, org, scopes and expiry; a new secret (new lookup and last4) shown in this response only. ' +
      'The replaced secret keeps verifying for grace_period_seconds (default 86400); rotating again during a grace period ends the older one at once; revoking stops both.',
  })
  @ApiBody({ type: RotateApiKeyDto, required: false })
  @ApiCreatedResponse({
    description:
      'Rotated: the key record including the new `key`, shown exactly once, and `previous_secret_expires_at` while the old secret still verifies.',
    type: RotatedApiKeyDto,
  })
  @ApiErrors({
    400: 'keyID is not a UUID, grace_period_seconds is not an integer from 0 to 604800, an unknown field, or a body that is not a JSON object.',
    ...AUTH_ERRORS,
    403: SESSION_REQUIRED,
    404: "No such key, or not the caller's; both cases look identical.",
    409: 'The key is revoked or expired: it cannot be rotated.',
    501: NOT_CONFIGURED,
  })
  rotate(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('keyID', 'The id from mint or list.') keyId: string,
    @Body(new StrictBodyPipe(RotateApiKeyDto)) dto: Readonly<RotateApiKeyDto>,
  ): Promise<MintedApiKey> {
    return this.apiKeys.rotate(principal, keyId, dto);
  }

  @Delete(':keyID')
  @KeyLifecycle()
  @HttpCode(204)
  @ApiOperation({
    operationId: 'revokeApiKey',
    summary: 'Revoke a key',
    description: 'Browser session only. Soft revoke: the key stops verifying at once and stays listed with revoked_at.',
  })
  @ApiNoContentResponse({
    description: 'Revoked (revoking an already revoked key also answers 204 and keeps revoked_at).',
  })
  @ApiErrors({
    400: 'keyID is not a UUID.',
    ...AUTH_ERRORS,
    403: SESSION_REQUIRED,
    404: "No such key, or not the caller's; both cases look identical.",
    501: NOT_CONFIGURED,
  })
  revoke(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('keyID', 'The id from mint or list.') keyId: string,
  ): Promise<void> {
    return this.apiKeys.revoke(principal, keyId);
  }
}
