import { Check, Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { CredentialDayColumns, OrgDayColumns } from './usage-day.columns.js';

/**
 * A meter the deployment defines, per org and UTC day: one row per meter (the contract's four
 * are columns of usage_counters). Charged by `kui_charge_meter_batch` (the migration
 * DeploymentMeters1766000000020 says why rows of their own).
 */
@Entity({ name: 'usage_meter_counters' })
@Index('usage_meter_counters_day_idx', ['day'])
@Check('usage_meter_counters_used_check', `used >= 0`)
export class UsageMeterCounterEntity extends OrgDayColumns {
  @PrimaryColumn({ type: 'text' })
  meter: string;

  @Column({ type: 'integer', default: 0 })
  used: number;

  /** The plan and the limit the meter's last successful charge of the day was decided under (null limit: unlimited). */
  @Column({ type: 'text', nullable: true })
  plan: string | null;

  @Column({ name: 'meter_limit', type: 'integer', nullable: true })
  meterLimit: number | null;
}

/** usage_meter_counters split by the credential that charged them, as usage_attribution splits usage_counters. */
@Entity({ name: 'usage_meter_attribution' })
@Index('usage_meter_attribution_credential_idx', ['credentialId', 'day'])
@Index('usage_meter_attribution_day_idx', ['day'])
@Check('usage_meter_attribution_credential_kind_check', `credential_kind IN ('api_key', 'session', 'system')`)
@Check('usage_meter_attribution_used_check', `used >= 0`)
export class UsageMeterAttributionEntity extends CredentialDayColumns {
  @PrimaryColumn({ type: 'text' })
  meter: string;

  /** The key's owner or the session's user; null for the system. */
  @Column({ name: 'user_id', type: 'uuid', nullable: true })
  userId: string | null;

  @Column({ type: 'integer', default: 0 })
  used: number;
}
