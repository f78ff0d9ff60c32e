import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One row per org per UTC day; every daily meter resets by starting a new row. */
@Entity({ name: 'usage_counters' })
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
