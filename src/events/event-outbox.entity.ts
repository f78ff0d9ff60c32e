import { Column, CreateDateColumn, Entity, Index, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';

/** An event written in the same transaction as its change; the relay turns it into delivery jobs. */
@Entity({ name: 'event_outbox' })
@Index('event_outbox_created_idx', ['createdAt'])
export class EventOutboxEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @Column({ type: 'text' })
  type: string;

  @Column({ type: 'jsonb' })
  data: Record<string, unknown>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

/** Makes an event that a scan or a threshold could raise many times fire once. */
@Entity({ name: 'event_marks' })
export class EventMarkEntity {
  @PrimaryColumn({ type: 'text' })
  kind: string;

  @PrimaryColumn({ type: 'text' })
  subject: string;

  @PrimaryColumn({ type: 'text' })
  mark: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
