import { Column, Entity, JoinColumn, OneToOne, PrimaryColumn, type Relation } from 'typeorm';
import { ApiKeyEntity } from './api-key.entity.js';

/**
 * Which key was warned of its coming stale revoke (the org's key policy), and when: a key is
 * warned again only once it has been used since (migration 1765300000000). Written and read only
 * by the stale sweep's statements (api-key-policy.sql.ts).
 */
@Entity({ name: 'api_key_stale_warnings' })
export class ApiKeyStaleWarningEntity {
  @PrimaryColumn({ name: 'key_id', type: 'uuid' })
  keyId: string;

  @OneToOne(() => ApiKeyEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'key_id', foreignKeyConstraintName: 'api_key_stale_warnings_key_id_fkey' })
  key?: Relation<ApiKeyEntity>;

  @Column({ name: 'warned_at', type: 'timestamptz' })
  warnedAt: Date;
}
