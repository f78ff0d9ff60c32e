import { Check, Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, Unique } from 'typeorm';

@Entity({ name: 'webhook_endpoints' })
@Index('webhook_endpoints_org_created_idx', ['orgId', 'createdAt', 'id'])
@Check(
  'webhook_endpoints_previous_secret_check',
  '(previous_secret_box IS NULL) = (previous_secret_expires_at IS NULL)',
)
export class WebhookEndpointEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @Column({ type: 'text' })
  url: string;

  @Column({ type: 'text', default: '' })
  description: string;

  @Column({ name: 'event_types', type: 'text', array: true })
  eventTypes: string[];

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  /** The signing secret, AES-256-GCM under a key derived from API_KEY_SECRET (see secret-box.ts); never in clear. */
  @Column({ name: 'secret_box', type: 'bytea' })
  secretBox: Buffer;

  /** After a rotation with an overlap: the secret rotated out, sealed the same way; it signs beside the new one until the time below. */
  @Column({ name: 'previous_secret_box', type: 'bytea', nullable: true })
  previousSecretBox: Buffer | null;

  @Column({ name: 'previous_secret_expires_at', type: 'timestamptz', nullable: true })
  previousSecretExpiresAt: Date | null;

  /** Set when a delivery exhausted its retries; cleared by a success or by re-enabling. */
  @Column({ name: 'failing_since', type: 'timestamptz', nullable: true })
  failingSince: Date | null;

  @Column({ name: 'created_by', type: 'uuid' })
  createdBy: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}

/** One delivery attempt of one event to one endpoint. */
@Entity({ name: 'webhook_deliveries' })
@Index('webhook_deliveries_endpoint_created_idx', ['endpointId', 'createdAt', 'id'])
@Unique('webhook_deliveries_job_attempt_key', ['jobId', 'attempt'])
@Check('webhook_deliveries_status_check', `status IN ('succeeded', 'failed')`)
export class WebhookDeliveryEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'endpoint_id', type: 'uuid' })
  endpointId: string;

  @Column({ name: 'event_id', type: 'uuid' })
  eventId: string;

  @Column({ name: 'event_type', type: 'text' })
  eventType: string;

  /** The pg-boss job that made this attempt (a retry through the API is a new job). */
  @Column({ name: 'job_id', type: 'uuid' })
  jobId: string;

  @Column({ type: 'integer' })
  attempt: number;

  @Column({ type: 'text' })
  status: 'succeeded' | 'failed';

  @Column({ name: 'response_status', type: 'integer', nullable: true })
  responseStatus: number | null;

  @Column({ name: 'latency_ms', type: 'integer' })
  latencyMs: number;

  /** At most 1 KB of what the receiver answered. */
  @Column({ name: 'response_body', type: 'text', nullable: true })
  responseBody: string | null;

  @Column({ type: 'text', nullable: true })
  error: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
