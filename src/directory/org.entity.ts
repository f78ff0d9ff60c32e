import { Check, Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { Plan } from '../common/roles.js';

@Entity({ name: 'orgs' })
@Check('orgs_plan_check', `plan IN ('free', 'pro')`)
@Check('orgs_api_version_check', `api_version ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'`)
export class OrgEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text', default: 'free' })
  plan: Plan;

  /** The dated API version answers default to (src/versioning/); migration 1765500000000. */
  @Column({ name: 'api_version', type: 'text', default: '2026-11-01' })
  apiVersion: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
