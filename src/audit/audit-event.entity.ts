import { Check, Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** One audit event. Append-only: the database refuses UPDATE and DELETE (see the migration). */
@Entity({ name: 'audit_events' })
@Index('audit_events_org_created_idx', ['orgId', 'createdAt', 'id'])
@Index('audit_events_created_idx', ['createdAt'])
@Check('audit_events_actor_type_check', `actor_type IN ('user', 'operator', 'system')`)
@Check('audit_events_credential_type_check', `credential_type IN ('session', 'api_key')`)
export class AuditEventEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @Column({ type: 'text' })
  action: string;

  @Column({ name: 'actor_type', type: 'text' })
  actorType: string;

  @Column({ name: 'actor_id', type: 'uuid', nullable: true })
  actorId: string | null;

  @Column({ name: 'actor_source', type: 'text', nullable: true })
  actorSource: string | null;

  @Column({ name: 'credential_type', type: 'text', nullable: true })
  credentialType: string | null;

  @Column({ name: 'credential_id', type: 'uuid', nullable: true })
  credentialId: string | null;

  @Column({ name: 'target_type', type: 'text' })
  targetType: string;

  @Column({ name: 'target_id', type: 'uuid' })
  targetId: string;

  @Column({ name: 'client_address', type: 'text', nullable: true })
  clientAddress: string | null;

  @Column({ name: 'user_agent', type: 'text', nullable: true })
  userAgent: string | null;

  @Column({ name: 'request_id', type: 'text', nullable: true })
  requestId: string | null;

  @Column({ type: 'jsonb' })
  details: Record<string, unknown>;
}
