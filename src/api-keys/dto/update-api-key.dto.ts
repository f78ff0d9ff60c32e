import { ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsBoolean, IsString } from 'class-validator';
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

  @RateLimitsSetting()
  rate_limits?: unknown[] | null;

  @CreditsSetting()
  credits?: CreditsValue | null;

  @AllowedCidrsSetting()
  allowed_cidrs?: string[] | null;

  @MetadataSetting()
  metadata?: Record<string, unknown> | null;
}
