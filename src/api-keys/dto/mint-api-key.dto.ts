import { ApiProperty, ApiPropertyOptional, ApiSchema, IntersectionType } from '@nestjs/swagger';
import { IsArray, IsDefined, IsInt, Max, Min } from 'class-validator';
import { SCOPE_ENUM } from '../../common/openapi.js';
import { IsUuidString, present } from '../../common/validation.js';
import { KeySettingsDto } from './key-settings.dto.js';

export const MAX_EXPIRES_IN_DAYS = 366;
const EXPIRY_RULE = `expires_in_days must be an integer from 0 to ${MAX_EXPIRES_IN_DAYS}`;

/** What only a mint says: where the key lives, what it may do and how long (the contract's fields beside `name`). */
class MintOnlyFields {
  @ApiProperty({ format: 'uuid', description: 'The org the key is bound to.' })
  @IsDefined({ message: 'org_id is required' })
  @IsUuidString()
  org_id: string;

  // No OpenAPI `default` on request fields: generated clients would then demand them. Defaults are in the descriptions.
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
    maximum: MAX_EXPIRES_IN_DAYS,
    description: 'Days until the key expires; 0 means never. Omitted: 0.',
  })
  @present('expires_in_days')
  @IsInt({ message: EXPIRY_RULE })
  @Min(0, { message: EXPIRY_RULE })
  @Max(MAX_EXPIRES_IN_DAYS, { message: EXPIRY_RULE })
  expires_in_days?: number;
}

/** POST /api-keys: the mint's own fields and the key's settings. `null` is not "absent": an explicit null is refused like any wrong type. */
@ApiSchema({
  name: 'MintApiKeyRequest',
  description: 'Unknown fields are refused (400); an explicit null is a wrong type, not an omission.',
})
export class MintApiKeyDto extends IntersectionType(MintOnlyFields, KeySettingsDto) {}
