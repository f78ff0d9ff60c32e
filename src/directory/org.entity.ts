import { Check, Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { Plan } from '../common/roles.js';

@Entity({ name: 'orgs' })
@Check('orgs_plan_check', `plan IN ('free', 'pro')`)
export class OrgEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text', default: 'free' })
  plan: Plan;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
