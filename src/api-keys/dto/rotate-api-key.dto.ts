import { ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsInt, Max, Min, ValidateIf } from 'class-validator';

export const MAX_GRACE_PERIOD_SECONDS = 604_800;
export const DEFAULT_GRACE_PERIOD_SECONDS = 86_400;
const RULE = `grace_period_seconds must be an integer from 0 to ${MAX_GRACE_PERIOD_SECONDS}`;

/** POST /api-keys/{keyID}/rotate. */
@ApiSchema({
  name: 'RotateApiKeyRequest',
  description: 'Unknown fields are refused (400). An empty body takes the default grace period.',
})
export class RotateApiKeyDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: MAX_GRACE_PERIOD_SECONDS,
    default: DEFAULT_GRACE_PERIOD_SECONDS,
    description: 'How long the replaced secret keeps verifying (seconds, at most 7 days); 0 stops it at once.',
  })
  @ValidateIf((o: RotateApiKeyDto) => o.grace_period_seconds !== undefined)
  @IsInt({ message: RULE })
  @Min(0, { message: RULE })
  @Max(MAX_GRACE_PERIOD_SECONDS, { message: RULE })
  grace_period_seconds?: number;
}
