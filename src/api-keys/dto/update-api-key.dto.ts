import { ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { ArrayMinSize, IsArray, IsBoolean, IsString } from 'class-validator';
import { SCOPE_ENUM } from '../../common/openapi.js';
import { ERRORS } from '../../common/error-messages.js';
import { IsStorableText, MaxStringLength, present } from '../../common/validation.js';
import { AllowedCidrsSetting, CreditsSetting, MetadataSetting, RateLimitsSetting } from './key-settings.fields.js';
import type { CreditsValue } from './key-settings.fields.js';

/** PATCH /api-keys/{keyID} and PATCH /orgs/{org_id}/api-keys/{keyID}: only the fields sent change. */
@ApiSchema({
  name: 'UpdateApiKeyRequest',
  description:
    'The settings to change; omitted fields stay as they are, null clears a setting. Unknown fields are refused (400).',
})
export class UpdateApiKeyDto {
  @ApiPropertyOptional({ maxLength: 100 })
  @present('name')
  @IsString({ message: 'name must be a string' })
  @MaxStringLength(100)
  @IsStorableText()
  name?: string;

  @ApiPropertyOptional({
    description: 'false: the key answers 401 like a revoked one until enabled again (same id, secret and history).',
  })
  @present('enabled')
  @IsBoolean({ message: 'enabled must be a boolean' })
  enabled?: boolean;

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

  @RateLimitsSetting()
  rate_limits?: unknown[] | null;

  @CreditsSetting()
  credits?: CreditsValue | null;

  @AllowedCidrsSetting()
  allowed_cidrs?: string[] | null;

  @MetadataSetting()
  metadata?: Record<string, unknown> | null;
}
