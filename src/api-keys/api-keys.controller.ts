import { applyDecorators, Body, Controller, Delete, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { CurrentPrincipal, SessionOnly } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { queryPipe, StrictBodyPipe, UuidParamPipe } from '../common/validation.js';
import { ApiKeysEnabledGuard } from './api-keys-enabled.guard.js';
import { ApiKeysService } from './api-keys.service.js';
import type { ApiKeyRecord, MintedApiKey } from './api-key.record.js';
import { MintApiKeyDto } from './dto/mint-api-key.dto.js';
import { ListApiKeysQuery } from './dto/list-api-keys.query.js';

/** Key lifecycle: a browser session only, then 501 when keys are not configured. */
const KeyLifecycle = () => applyDecorators(SessionOnly(), UseGuards(ApiKeysEnabledGuard));

@Controller('api-keys')
export class ApiKeysController {
  constructor(private readonly apiKeys: ApiKeysService) {}

  @Post()
  @KeyLifecycle()
  mint(@CurrentPrincipal() principal: Principal, @Body(StrictBodyPipe) dto: MintApiKeyDto): Promise<MintedApiKey> {
    return this.apiKeys.mint(principal, dto);
  }

  @Get()
  @KeyLifecycle()
  list(@CurrentPrincipal() principal: Principal, @Query(queryPipe) query: ListApiKeysQuery): Promise<{ keys: ApiKeyRecord[] }> {
    return this.apiKeys.list(principal, query.org_id ?? null);
  }

  @Delete(':keyID')
  @KeyLifecycle()
  @HttpCode(204)
  revoke(@CurrentPrincipal() principal: Principal, @Param('keyID', new UuidParamPipe('keyID')) keyId: string): Promise<void> {
    return this.apiKeys.revoke(principal, keyId);
  }
}
