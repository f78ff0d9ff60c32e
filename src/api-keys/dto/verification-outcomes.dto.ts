import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsIn, ValidateIf } from 'class-validator';
import type { Outcome } from '../../auth/verification-outcome-recorder.js';
import { MAX_RANGE_DAYS } from '../../common/day-range.js';
import { DayRangeQuery } from '../../common/day-range.query.js';

export const GRANULARITIES = ['hour', 'day'] as const;
export type Granularity = (typeof GRANULARITIES)[number];
/** Days of hourly buckets kept (and so the oldest `from` with `granularity=hour`). */
export const HOURLY_RETENTION_DAYS = 90;

/** `?from=&to=&granularity=`: a history request's days, and the buckets they are counted in. */
export class VerificationOutcomesQuery extends DayRangeQuery {
  @ApiPropertyOptional({
    enum: GRANULARITIES,
    description: `One bucket per UTC hour (kept ${HOURLY_RETENTION_DAYS} days) or per UTC day (kept as long as usage history). Default: \`day\`.`,
  })
  @ValidateIf((o: VerificationOutcomesQuery) => o.granularity !== undefined)
  @IsIn(GRANULARITIES, { message: `granularity must be one of ${GRANULARITIES.join(', ')}` })
  granularity?: Granularity;
}

const count = (description: string) => ApiProperty({ type: 'integer', minimum: 0, description });

@ApiSchema({
  name: 'VerificationOutcomeCounts',
  description:
    'Requests with the key in the bucket, by what was decided; each request counts once, by its final decision.',
})
export class OutcomeCountsDto implements Record<Outcome, number> {
  @count('Admitted by every guard (and, on a charging route, by the org’s meter).')
  valid: number;

  @count('Refused: the key is revoked (401).')
  revoked: number;

  @count('Refused: the key has expired (401).')
  expired: number;

  @count('Refused: the key is disabled (401).')
  disabled: number;

  @count('Refused: the key awaits approval under the org’s key policy (401).')
  pending: number;

  @count('Refused: the client address is outside the key’s `allowed_cidrs` (403).')
  ip_refused: number;

  @count('Refused: a rate window of the key or its plan is empty (429).')
  rate_limited: number;

  @count('Refused: the key’s credits are spent (429).')
  credits_exhausted: number;

  @count('Refused: the org’s daily meter for the route is spent (429).')
  usage_exceeded: number;

  @count('Refused: the key lacks a scope the route requires (403).')
  insufficient_scope: number;
}

@ApiSchema({
  name: 'VerificationBucket',
  description: 'One UTC hour or day in which the key (or the org’s keys) was used.',
})
export class VerificationBucketDto {
  @ApiProperty({ format: 'date-time', description: 'The first instant of the hour or UTC day.' })
  start: string;

  @ApiProperty({ type: () => OutcomeCountsDto })
  outcomes: OutcomeCountsDto;
}

@ApiSchema({
  name: 'VerificationOutcomes',
  description:
    'What the requests with a key (or with every key of an org) were decided, per UTC hour or day from `from` to `to`. Counted behind the responses: the last ten seconds may be missing.',
})
export class VerificationOutcomesDto {
  @ApiProperty({ enum: GRANULARITIES })
  granularity: Granularity;

  @ApiProperty({ format: 'date', description: 'The first UTC day covered.' })
  from: string;

  @ApiProperty({ format: 'date', description: 'The last UTC day covered.' })
  to: string;

  @ApiProperty({
    type: () => VerificationBucketDto,
    isArray: true,
    description: `Oldest first; an hour or day with no request is left out, so there are at most ${MAX_RANGE_DAYS * 24} (hours) or ${MAX_RANGE_DAYS} (days).`,
  })
  buckets: VerificationBucketDto[];
}
