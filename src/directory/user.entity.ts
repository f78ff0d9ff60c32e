import { Check, Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** A person signs in; a service account (an org's, holding its service keys) never does. */
export type UserKind = 'person' | 'service';

@Entity({ name: 'users' })
// One account per address, ignoring case: citext compares case-insensitively (migration 1764600000000).
@Index('users_email_key', ['email'], { unique: true })
@Check('users_kind_check', `kind IN ('person', 'service')`)
export class UserEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'citext' })
  email: string;

  @Column({ type: 'text', default: 'person' })
  kind: UserKind;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
