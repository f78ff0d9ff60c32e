import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { PLANS, type Plan } from '../../common/roles.js';
import { MeterDto, UsageBreakdownDto, UsageMetersDto } from './usage-report.dto.js';

@ApiSchema({
  name: 'DailyUsage',
  description: 'One UTC day: the meters of GET /usage, with the plan and limits that applied that day.',
})
export class DailyUsageDto {
  @ApiProperty({ format: 'date', example: '2026-11-22' })
  day: string;

  @ApiProperty({
    enum: PLANS,
    description: "The plan the day's last charge was decided under; the org's current plan for a day without charges.",
  })
  plan: Plan;

  @ApiProperty({ type: () => MeterDto, description: 'Query wallet (asks plus retrieves) that day.' })
  mcp_queries: MeterDto;

  @ApiProperty({ type: () => UsageBreakdownDto })
  breakdown: UsageBreakdownDto;

  @ApiProperty({ type: () => MeterDto })
  imports: MeterDto;

  @ApiProperty({ type: () => MeterDto })
  captures: MeterDto;

  @ApiProperty({
    type: () => UsageMetersDto,
    description:
      "That day's use of every meter, the deployment's own included, with the limit it was charged under (for a meter not charged that day, the day's plan's limit).",
  })
  meters: UsageMetersDto;
}

@ApiSchema({
  name: 'DailyUsageReport',
  description: 'Every UTC day from `from` to `to`, oldest first; days without usage are zeros.',
})
export class DailyUsageReportDto {
  @ApiProperty({ format: 'date' })
  from: string;

  @ApiProperty({ format: 'date' })
  to: string;

  @ApiProperty({ type: () => [DailyUsageDto] })
  days: DailyUsageDto[];
}

@ApiSchema({
  name: 'KeyDailyUsageReport',
  description: "What one API key charged, per UTC day; limits are its org's (the key spends the org's meters).",
})
export class KeyDailyUsageReportDto extends DailyUsageReportDto {
  @ApiProperty({ format: 'uuid' })
  key_id: string;

  @ApiProperty({ format: 'uuid' })
  org_id: string;
}
