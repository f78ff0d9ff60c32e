import { Check, Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import type { Scope } from '../common/roles.js';
import type { CreditRefill, RateWindow } from '../budgets/key-settings.js';
import type { ControlsSetBy } from './controls-set-by.js';

@Entity({ name: 'api_keys' })
@Check('api_keys_approval_check', `approval IN ('pending', 'denied')`)
@Check('api_keys_credits_remaining_check', `credits_remaining >= 0`)
@Index('api_keys_user_created_idx', ['userId', 'createdAt', 'id'])
@Index('api_keys_org_id_idx', ['orgId'])
@Index('api_keys_org_created_idx', ['orgId', 'createdAt', 'id'])
// The active-key cap's count on every mint: an index-only scan of the unrevoked keys (migration 1764700000000).
@Index('api_keys_active_owner_idx', ['userId', 'orgId', 'expiresAt'], { where: 'revoked_at IS NULL' })
export class ApiKeyEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @Column({ type: 'text', default: '' })
  name: string;

  /** Public id that appears inside the key; how verification finds the row. */
  @Column({ type: 'text', unique: true })
  lookup: string;

  @Column({ type: 'text' })
  last4: string;

  /** HMAC-SHA-256 of the whole key under API_KEY_SECRET; the key itself is never stored. */
  @Column({ name: 'key_hash', type: 'bytea' })
  keyHash: Buffer;

  @Column({ type: 'text', array: true })
  /** Only values of SCOPES are ever written (the mint validates them). */
  scopes: Scope[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  /** A service key's minting owner or admin (its `userId` is the org's service account); null for a personal key. */
  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy: string | null;

  /** Rotation: the replaced secret's lookup, hash and the end of its grace period (all null outside one). */
  @Column({ name: 'previous_lookup', type: 'text', nullable: true, unique: true })
  previousLookup: string | null;

  @Column({ name: 'previous_key_hash', type: 'bytea', nullable: true })
  previousKeyHash: Buffer | null;

  @Column({ name: 'previous_expires_at', type: 'timestamptz', nullable: true })
  previousExpiresAt: Date | null;

  /** Under the org's approval policy: `pending` until approved (then null), `denied` once refused; null for every other key. */
  @Column({ type: 'text', nullable: true })
  approval: 'pending' | 'denied' | null;
  /** Per-key controls (migration 1765100000000, docs/key-controls.md); null: not set. */
  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  @Column({ name: 'rate_limits', type: 'jsonb', nullable: true })
  rateLimits: RateWindow[] | null;

  /** The balance not yet leased by an instance (bigint: read as a string). */
  @Column({ name: 'credits_remaining', type: 'bigint', nullable: true })
  creditsRemaining: string | null;

  @Column({ name: 'credits_refill', type: 'jsonb', nullable: true })
  creditsRefill: CreditRefill | null;

  @Column({ name: 'credits_period', type: 'timestamptz', nullable: true })
  creditsPeriod: Date | null;

  @Column({ name: 'credits_epoch', type: 'integer', default: 0 })
  creditsEpoch: number;

  @Column({ name: 'allowed_cidrs', type: 'text', array: true, nullable: true })
  allowedCidrs: string[] | null;

  @Column({ type: 'jsonb', nullable: true })
  metadata: Record<string, unknown> | null;

  /** Who set each control that is set (migration 1766000000070, control-owners.ts); null: none set. */
  @Column({ name: 'controls_set_by', type: 'jsonb', nullable: true })
  controlsSetBy: ControlsSetBy | null;

  /** Free text about the key (migration 1765600000000); null: none. */
  @Column({ type: 'text', nullable: true })
  description: string | null;
}
