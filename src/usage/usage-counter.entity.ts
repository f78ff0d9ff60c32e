import { Check, Column, Entity, Index } from 'typeorm';
import { OrgDayColumns } from './usage-day.columns.js';

/** One row per org per UTC day; every daily meter resets by starting a new row. */
@Entity({ name: 'usage_counters' })
@Index('usage_counters_day_idx', ['day'])
@Check('usage_counters_asks_check', `asks >= 0`)
@Check('usage_counters_retrieves_check', `retrieves >= 0`)
@Check('usage_counters_imports_check', `imports >= 0`)
@Check('usage_counters_captures_check', `captures >= 0`)
export class UsageCounterEntity extends OrgDayColumns {
  @Column({ type: 'integer', default: 0 })
  asks: number;

  @Column({ type: 'integer', default: 0 })
  retrieves: number;

  @Column({ type: 'integer', default: 0 })
  imports: number;

  @Column({ type: 'integer', default: 0 })
  captures: number;

  /** The plan and limits the day's last successful charge was decided under; null before any (or before history existed). */
  @Column({ type: 'text', nullable: true })
  plan: string | null;

  @Column({ name: 'wallet_limit', type: 'integer', nullable: true })
  walletLimit: number | null;

  @Column({ name: 'imports_limit', type: 'integer', nullable: true })
  importsLimit: number | null;

  @Column({ name: 'captures_limit', type: 'integer', nullable: true })
  capturesLimit: number | null;
}
