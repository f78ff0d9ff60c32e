import { Check, Column, Entity, Index } from 'typeorm';
import { CredentialDayColumns } from './usage-day.columns.js';

/**
 * The org's daily counters split by the credential that charged them. Written in the same
 * statement as the counter it splits, so the rows of a day always sum to it.
 */
@Entity({ name: 'usage_attribution' })
@Index('usage_attribution_credential_idx', ['credentialId', 'day'])
@Index('usage_attribution_day_idx', ['day'])
@Check('usage_attribution_credential_kind_check', `credential_kind IN ('api_key', 'session', 'system')`)
@Check('usage_attribution_asks_check', `asks >= 0`)
@Check('usage_attribution_retrieves_check', `retrieves >= 0`)
@Check('usage_attribution_imports_check', `imports >= 0`)
@Check('usage_attribution_captures_check', `captures >= 0`)
export class UsageAttributionEntity extends CredentialDayColumns {
  /** The key's owner or the session's user; null for the system. */
  @Column({ name: 'user_id', type: 'uuid', nullable: true })
  userId: string | null;

  @Column({ type: 'integer', default: 0 })
  asks: number;

  @Column({ type: 'integer', default: 0 })
  retrieves: number;

  @Column({ type: 'integer', default: 0 })
  imports: number;

  @Column({ type: 'integer', default: 0 })
  captures: number;
}
