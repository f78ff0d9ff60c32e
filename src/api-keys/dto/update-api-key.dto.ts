import { ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { ArrayMinSize, IsArray } from 'class-validator';
import { ERRORS } from '../../common/error-messages.js';
import { SCOPE_ENUM } from '../../common/openapi.js';
import { present } from '../../common/validation.js';
import { KeySettingsDto } from './key-settings.dto.js';

/** PATCH /api-keys/{keyID} and PATCH /orgs/{org_id}/api-keys/{keyID}: only the fields sent change. */
@ApiSchema({
  name: 'UpdateApiKeyRequest',
  description:
    'The settings to change; omitted fields stay as they are, null clears a setting. Unknown fields are refused (400).',
})
export class UpdateApiKeyDto extends KeySettingsDto {
  @ApiPropertyOptional({
    enum: SCOPE_ENUM,
    isArray: true,
    minItems: 1,
    description:
      'Narrows the key to these scopes, each one it holds now (a scope it does not hold: 403, a key is never widened; [] is a 400). Applied on every instance before the answer.',
  })
  @present('scopes')
  @IsArray({ message: 'scopes must be an array of strings' })
  @ArrayMinSize(1, { message: ERRORS.noScopesLeft })
  scopes?: string[];
}
