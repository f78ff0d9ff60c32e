import { ApiPropertyOptional } from '@nestjs/swagger';
import { Allow } from 'class-validator';
import { MAX_RANGE_DAYS } from './day-range.js';

/** `?from=&to=`: the days of a history request, checked by `resolveDayRange` (each rule a 400 naming its parameter). */
export class DayRangeQuery {
  @ApiPropertyOptional({
    format: 'date',
    example: '2026-11-01',
    description: 'First UTC day (YYYY-MM-DD). Default: 29 days before `to` (or the oldest day kept).',
  })
  @Allow()
  from?: string;

  @ApiPropertyOptional({
    format: 'date',
    example: '2026-11-23',
    description: `Last UTC day (YYYY-MM-DD), not after today. Default: today. At most ${MAX_RANGE_DAYS} days from \`from\`, inclusive.`,
  })
  @Allow()
  to?: string;
}
