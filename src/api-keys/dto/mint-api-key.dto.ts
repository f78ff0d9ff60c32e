import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsArray, IsBoolean, IsDefined, IsInt, IsString, Max, Min } from 'class-validator';
import { SCOPE_ENUM } from '../../common/openapi.js';
import { IsStorableText, IsUuidString, MaxStringLength, present } from '../../common/validation.js';
import {
  AllowedCidrsSetting,
  CreditsSetting,
  MetadataSetting,
  RateLimitsSetting,
  type CreditsValue,
} from './key-settings.fields.js';

/** POST /api-keys. `null` is not "absent": an explicit null is refused like any wrong type. */
@ApiSchema({
  name: 'MintApiKeyRequest',
  description: 'Unknown fields are refused (400); an explicit null is a wrong type, not an omission.',
})
export class MintApiKeyDto {
  @ApiProperty({ format: 'uuid', description: 'The org the key is bound to.' })
  @IsDefined({ message: 'org_id is required' })
  @IsUuidString()
  org_id: string;

  // No OpenAPI `default` on request fields: generated clients would then demand them. Defaults are in the descriptions.
  @ApiPropertyOptional({
    maxLength: 100,
    description: 'Label, at most 100 characters (JavaScript string length), stored as given. Omitted: "".',
  })
  @present('name')
  @IsString({ message: 'name must be a string' })
  @MaxStringLength(100)
  @IsStorableText()
  name?: string;

  @ApiPropertyOptional({
    enum: SCOPE_ENUM,
    isArray: true,
    description:
      "Registered scopes (GET /scopes lists them; an unregistered one is refused, 400). Omitted or [] means read-only (['decisions:read']). A scope above the caller's role in the org is refused (403); duplicates are removed.",
  })
  @present('scopes')
  @IsArray({ message: 'scopes must be an array of strings' })
  scopes?: string[];

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 366,
    description: 'Days until the key expires; 0 means never. Omitted: 0.',
  })
  @present('expires_in_days')
  @IsInt({ message: 'expires_in_days must be an integer from 0 to 366' })
  @Min(0, { message: 'expires_in_days must be an integer from 0 to 366' })
  @Max(366, { message: 'expires_in_days must be an integer from 0 to 366' })
  expires_in_days?: number;

  // The per-key controls (docs/key-controls.md), all optional: the contract's body is valid as is.
  @ApiPropertyOptional({ description: 'false: minted disabled (401 until enabled with PATCH). Omitted: true.' })
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
