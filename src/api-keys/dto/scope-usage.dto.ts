import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { SCOPE_ENUM } from '../../common/openapi.js';

export const MAX_SCOPE_USAGE_DAYS = 90;
export const DEFAULT_SCOPE_USAGE_DAYS = 30;
const DAYS_RULE = `days must be an integer from 1 to ${MAX_SCOPE_USAGE_DAYS}`;

/** `?days=N` of GET …/api-keys/{keyID}/scope-usage. */
export class ScopeUsageQuery {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: MAX_SCOPE_USAGE_DAYS,
    description: `UTC days counted, today included (${DEFAULT_SCOPE_USAGE_DAYS} when omitted).`,
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^\d{1,3}$/.test(value) ? Number(value) : value,
  )
  @IsInt({ message: DAYS_RULE })
  @Min(1, { message: DAYS_RULE })
  @Max(MAX_SCOPE_USAGE_DAYS, { message: DAYS_RULE })
  days?: number;
}

@ApiSchema({ name: 'ScopeUse', description: 'How much the key used one of its scopes in the period.' })
export class ScopeUseDto {
  @ApiProperty({ enum: SCOPE_ENUM })
  scope: string;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'Requests on routes that required this scope.' })
  requests: number;

  @ApiPropertyOptional({ format: 'date-time', description: 'The last such request; omitted when there was none.' })
  last_used_at?: string;
}

@ApiSchema({
  name: 'ScopeUsage',
  description:
    'Per scope the key holds, the requests it made on routes that required it in the last `days` UTC days. Counts are written behind the responses and may lag by a second or two.',
})
export class ScopeUsageDto {
  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_SCOPE_USAGE_DAYS })
  days: number;

  @ApiProperty({ type: ScopeUseDto, isArray: true, description: 'Every scope the key holds, in registry order.' })
  scopes: ScopeUseDto[];

  @ApiProperty({
    enum: SCOPE_ENUM,
    isArray: true,
    description: 'The scopes the key holds but did not use in the period: what narrowing to its use would take away.',
  })
  unused: string[];
}
