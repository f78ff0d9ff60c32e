import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * Per (user, org): how many of the user's keys in the org are not revoked (expired ones
 * included). Written only by the trigger on api_keys that migration 1764800000000 creates, and
 * read by the mint's cap check; a schema built by `synchronize` has the table but not the trigger.
 */
@Entity({ name: 'api_key_counts' })
export class ApiKeyCountEntity {
  @PrimaryColumn({ name: 'user_id', type: 'uuid' })
  userId: string;

  @PrimaryColumn({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @Column({ type: 'integer', default: 0 })
  unrevoked: number;
}
