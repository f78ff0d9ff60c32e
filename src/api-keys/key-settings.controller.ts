import { Versioned } from '../versioning/operation-versioning.js';
import { Body, Controller, Patch, UseInterceptors } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { RequestOriginInterceptor } from '../audit/request-origin.interceptor.js';
import { CurrentPrincipal } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS, BODY_ERRORS } from '../common/openapi.js';
import { StrictBodyPipe, UuidParam } from '../common/validation.js';
import { KeyLifecycle, NOT_CONFIGURED, SESSION_REQUIRED } from './api-keys.controller.js';
import type { ApiKeyRecord } from './api-key.record.js';
import { ApiKeyRecordDto } from './dto/api-key-record.dto.js';
import { UpdateApiKeyDto } from './dto/update-api-key.dto.js';
import { KeySettingsService } from './key-settings.service.js';

// The rules are the request schema's (KeySettingsDto): the 400 names the field and the rule it broke.
const BAD_SETTINGS =
  'keyID (or org_id) is not a UUID; no field given; a setting outside its rule (the message names the field and the rule, as the request schema describes it); an unknown field.';
const CHANGE =
  'Only the fields sent change; null clears a setting. Audited and emitted as `api_key.updated`; every instance applies it before this answers (a disabled key is refused everywhere from then on; a tightened window or lowered credits hold everywhere, leases taken under the old settings given back).';

/** A key's settings: its owner's route and the org admins' route. */
@ApiTags('api-keys')
@UseInterceptors(RequestOriginInterceptor)
@Controller()
export class KeySettingsController {
  constructor(private readonly keys: KeySettingsService) {}

  @Versioned('updateApiKey')
  @Patch('api-keys/:keyID')
  @KeyLifecycle()
  @ApiOperation({
    operationId: 'updateApiKey',
    summary: 'Change a key’s settings',
    description: `Browser session only, your own key. ${CHANGE} A control an org owner or admin set can only be narrowed here (docs/key-controls.md); it stays theirs.`,
  })
  @ApiBody({ type: UpdateApiKeyDto })
  @ApiOkResponse({ type: ApiKeyRecordDto, description: 'The key record with its settings.' })
  @ApiErrors({
    400: BAD_SETTINGS,
    ...AUTH_ERRORS,
    403: `${SESSION_REQUIRED} Or the change lifts a control an org owner or admin set (\`controls_set_by\`: \`admin\`): the key's owner may only narrow it, and only an owner or admin enables a key they disabled; the message names the control.`,
    404: "No such key, or not the caller's; both cases look identical.",
    ...BODY_ERRORS,
    501: NOT_CONFIGURED,
  })
  update(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('keyID') keyId: string,
    @Body(new StrictBodyPipe(UpdateApiKeyDto)) dto: Readonly<UpdateApiKeyDto>,
  ): Promise<ApiKeyRecord> {
    return this.keys.update(principal, keyId, dto);
  }

  @Versioned('updateOrgApiKey')
  @Patch('orgs/:org_id/api-keys/:keyID')
  @KeyLifecycle()
  @ApiTags('orgs')
  @ApiOperation({
    operationId: 'updateOrgApiKey',
    summary: 'Change the settings of any key of an org (owners and admins)',
    description: `Browser session only. ${CHANGE} Every control sent is recorded as set by an admin (\`controls_set_by\`), and may be changed or lifted whoever set it.`,
  })
  @ApiBody({ type: UpdateApiKeyDto })
  @ApiOkResponse({ type: ApiKeyRecordDto })
  @ApiErrors({
    400: BAD_SETTINGS,
    ...AUTH_ERRORS,
    403: 'Called with an API key, or the caller is a member or viewer of the org (owners and admins only).',
    404: 'The org does not exist or the caller is not a member; or no such key in this org.',
    ...BODY_ERRORS,
    501: NOT_CONFIGURED,
  })
  updateInOrg(
    @CurrentPrincipal() principal: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('keyID') keyId: string,
    @Body(new StrictBodyPipe(UpdateApiKeyDto)) dto: Readonly<UpdateApiKeyDto>,
  ): Promise<ApiKeyRecord> {
    return this.keys.updateInOrg(principal, orgId, keyId, dto);
  }
}
