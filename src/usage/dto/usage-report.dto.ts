import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { PLANS, type Plan } from '../../common/roles.js';

@ApiSchema({ name: 'Meter' })
export class MeterDto {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Used today (UTC).' })
  used: number;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    nullable: true,
    description: 'Daily limit of the plan; null when unlimited.',
  })
  limit: number | null;
}

@ApiSchema({ name: 'UsageBreakdown', description: 'How the query wallet was spent.' })
export class UsageBreakdownDto {
  @ApiProperty({ type: 'integer', minimum: 0 })
  asks: number;

  @ApiProperty({ type: 'integer', minimum: 0 })
  retrieves: number;
}

@ApiSchema({
  name: 'UsageMeters',
  description:
    "Every meter of the deployment by name: the contract's asks, retrieves, imports and captures (asks and retrieves show the query wallet's limit, which they share), then the deployment's own meters.",
})
export class UsageMetersDto {
  @ApiProperty({ type: () => MeterDto })
  asks: MeterDto;

  @ApiProperty({ type: () => MeterDto })
  retrieves: MeterDto;

  @ApiProperty({ type: () => MeterDto })
  imports: MeterDto;

  @ApiProperty({ type: () => MeterDto })
  captures: MeterDto;

  /** A meter the deployment defines (USAGE_METERS, the module option `meters`). */
  [meter: string]: MeterDto;
}

@ApiSchema({
  name: 'UsageReport',
  description: 'Plan and daily meters of the org (contract 2.2). Reading it never charges anything.',
})
export class UsageReportDto {
  @ApiProperty({ enum: PLANS, description: "The org's plan." })
  plan: Plan;

  @ApiProperty({ type: () => MeterDto, description: 'Summed daily query wallet (asks plus retrieves).' })
  mcp_queries: MeterDto;

  @ApiProperty({ type: () => UsageBreakdownDto })
  breakdown: UsageBreakdownDto;

  @ApiProperty({ type: () => MeterDto, description: 'Daily imports.' })
  imports: MeterDto;

  @ApiProperty({ type: () => MeterDto, description: 'Daily decision captures.' })
  captures: MeterDto;

  @ApiProperty({ format: 'date-time', description: 'Next UTC midnight, when every daily meter resets.' })
  resets_at: string;

  @ApiProperty({
    type: () => UsageMetersDto,
    description:
      "Today's use and limit of every meter, the deployment's own included; beside the contract's fields above.",
  })
  meters: UsageMetersDto;
}
