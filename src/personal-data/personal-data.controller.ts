import { Readable } from 'node:stream';
import { Controller, Get, HttpCode, Post, StreamableFile, UseGuards, UseInterceptors } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { RequestOriginInterceptor } from '../audit/request-origin.interceptor.js';
import { ApiErrors } from '../common/openapi.js';
import { UuidParam } from '../common/validation.js';
import { ErasureDto, PersonalDataExportDto } from './dto/personal-data.dto.js';
import { OperatorTokenGuard } from './operator-token.guard.js';
import { ADMIN_TOKEN_SCHEME } from './personal-data.options.js';
import { API_OPERATOR, PersonalDataService } from './personal-data.service.js';

const ERRORS_OF_OPERATOR_ROUTES = {
  400: 'user_id is not a UUID.',
  401: 'The request did not carry `Authorization: Bearer <ADMIN_API_TOKEN>` (a session or an API key is not it).',
  404: 'No user with this id; or ADMIN_API_TOKEN is not set on this deployment (the operator routes are off).',
  429: 'Too many failed authentications from this address (AUTH_FAILURE_LIMIT per minute); see Retry-After.',
  503: 'The database is unavailable; retry shortly.',
};

/**
 * A person's data on request (GDPR articles 15, 17 and 20), for the operator of the deployment
 * only: authenticated by ADMIN_API_TOKEN, never by a session or an API key, so no org admin can
 * reach it. Mounted by the standalone server only (app.module.ts), never by the library module.
 */
@ApiTags('operator')
@ApiSecurity(ADMIN_TOKEN_SCHEME)
@UseGuards(OperatorTokenGuard)
// The audit events of an erasure carry the operator's client address and request id.
@UseInterceptors(RequestOriginInterceptor)
@Controller('admin/users')
export class PersonalDataController {
  constructor(private readonly personalData: PersonalDataService) {}

  @Get(':user_id/export')
  @ApiOperation({
    operationId: 'exportUserData',
    summary: 'Export everything held about a user (operator)',
    description:
      'One JSON document: the user, their memberships and workspaces, every key (masked), their audit events as actor and their usage attribution. Streamed: it is never held in memory whole.',
  })
  @ApiProduces('application/json')
  @ApiOkResponse({ type: PersonalDataExportDto })
  @ApiErrors(ERRORS_OF_OPERATOR_ROUTES)
  async export(@UuidParam('user_id') userId: string): Promise<StreamableFile> {
    const pieces = await this.personalData.exportDocument(userId);
    return new StreamableFile(Readable.from(pieces), { type: 'application/json; charset=utf-8' });
  }

  @Post(':user_id/erase')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'eraseUser',
    summary: 'Erase a user (operator)',
    description:
      "Revokes the user's keys, removes their memberships (a `user.erased` audit event in each org), pseudonymises them in the audit log and replaces their e-mail with a tombstone. Idempotent; a second call completes an erasure that was interrupted.",
  })
  @ApiOkResponse({ type: ErasureDto })
  @ApiErrors({ ...ERRORS_OF_OPERATOR_ROUTES, 501: 'API_KEY_SECRET is not set: the pseudonyms cannot be computed.' })
  erase(@UuidParam('user_id') userId: string): Promise<ErasureDto> {
    return this.personalData.erase(userId, API_OPERATOR);
  }
}
