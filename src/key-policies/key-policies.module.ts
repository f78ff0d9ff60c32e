import { Module, type DynamicModule } from '@nestjs/common';
import { ApiKeyStoreModule } from '../api-keys/api-key-store.module.js';
import { ApiKeysModule } from '../api-keys/api-keys.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { PeriodicJobsModule } from '../common/periodic-jobs.js';
import { KeyPoliciesController } from './key-policies.controller.js';
import { KeyPoliciesService } from './key-policies.service.js';
import { KeyPolicyStoreModule } from './key-policy-store.module.js';
import { StaleKeysJob } from './stale-keys.job.js';

/** The org's key policy (GET/PUT /orgs/{org_id}/key-policy) and the stale-key sweep it drives. */
@Module({
  imports: [AuthModule, ApiKeysModule, ApiKeyStoreModule, KeyPolicyStoreModule, PeriodicJobsModule],
  providers: [KeyPoliciesService, StaleKeysJob],
  exports: [KeyPoliciesService],
})
export class KeyPoliciesModule {
  static withHttp(): DynamicModule {
    return { module: KeyPoliciesModule, controllers: [KeyPoliciesController] };
  }
}
