import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OrgKeyPolicyEntity } from './key-policy.entity.js';
import { KeyPolicyRepository } from './key-policy.repository.js';
import { KeyPolicyRules } from './key-policy-rules.js';

/**
 * The org_key_policies table and the rules read from it, on their own so that the root module
 * can bind the key feature's KeyPolicyPort to KeyPolicyRules without a module cycle (the policy
 * feature's HTTP module imports the key feature for its unit of work).
 */
@Module({
  imports: [TypeOrmModule.forFeature([OrgKeyPolicyEntity])],
  providers: [KeyPolicyRepository, KeyPolicyRules],
  exports: [KeyPolicyRepository, KeyPolicyRules],
})
export class KeyPolicyStoreModule {}
