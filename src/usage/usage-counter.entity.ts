import { Check, Column, Entity, PrimaryColumn } from 'typeorm';

/** One row per org per UTC day; every daily meter resets by starting a new row. */
@Entity({ name: 'usage_counters' })
@Check('usage_counters_asks_check', `asks >= 0`)
@Check('usage_counters_retrieves_check', `retrieves >= 0`)
@Check('usage_counters_imports_check', `imports >= 0`)
@Check('usage_counters_captures_check', `captures >= 0`)
export class UsageCounterEntity {
  @PrimaryColumn({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @PrimaryColumn({ type: 'date' })
  day: string;

  @Column({ type: 'integer', default: 0 })
  asks: number;

  @Column({ type: 'integer', default: 0 })
  retrieves: number;

  @Column({ type: 'integer', default: 0 })
  imports: number;

  @Column({ type: 'integer', default: 0 })
  captures: number;
}
