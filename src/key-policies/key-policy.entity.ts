import { Check, Column, Entity, PrimaryColumn } from 'typeorm';
import type { Role, Scope } from '../common/roles.js';

/** An org's key policy (migration 1765300000000); an org without a row has none. No foreign key: a host's directory may keep orgs elsewhere. */
@Entity({ name: 'org_key_policies' })
@Check('org_key_policies_max_lifetime_days_check', 'max_lifetime_days BETWEEN 1 AND 366')
@Check('org_key_policies_stale_after_days_check', 'stale_after_days BETWEEN 30 AND 730')
export class OrgKeyPolicyEntity {
  @PrimaryColumn({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @Column({ name: 'max_lifetime_days', type: 'integer', nullable: true })
  maxLifetimeDays: number | null;

  @Column({ name: 'require_expiry', type: 'boolean', default: false })
  requireExpiry: boolean;

  @Column({ name: 'stale_after_days', type: 'integer', nullable: true })
  staleAfterDays: number | null;

  @Column({ name: 'allowed_scopes_by_role', type: 'jsonb', nullable: true })
  allowedScopesByRole: Partial<Record<Role, Scope[]>> | null;

  @Column({ name: 'approval_required_for', type: 'text', array: true, nullable: true })
  approvalRequiredFor: Scope[] | null;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  /** The owner who set it. */
  @Column({ name: 'updated_by', type: 'uuid', nullable: true })
  updatedBy: string | null;
}
