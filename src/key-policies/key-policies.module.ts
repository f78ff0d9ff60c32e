import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { ApiKeyStoreModule } from '../api-keys/api-key-store.module.js';
import { ApiKeysModule } from '../api-keys/api-keys.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { PeriodicJobsModule } from '../common/periodic-jobs.js';
import { KeyPoliciesController } from './key-policies.controller.js';
import { KeyPoliciesService } from './key-policies.service.js';
import { KeyPolicyStoreModule } from './key-policy-store.module.js';
import { StaleKeysJob } from './stale-keys.job.js';

/**
 * The org's key policy (GET/PUT /orgs/{org_id}/key-policy) and the stale-key sweep it drives.
 * `keys` is the key feature exactly as the root module imports it (the same object: plain, or
 * its withHttp() form), so Nest builds that module once and every feature shares its one
 * KeyChanges; a second copy would also mount the key routes twice.
 */
@Module({
  imports: [AuthModule, ApiKeyStoreModule, KeyPolicyStoreModule, PeriodicJobsModule],
  providers: [KeyPoliciesService, StaleKeysJob],
  exports: [KeyPoliciesService],
})
export class KeyPoliciesModule {
  static register(keys: Type<ApiKeysModule> | DynamicModule, http: boolean): DynamicModule {
    return { module: KeyPoliciesModule, imports: [keys], controllers: http ? [KeyPoliciesController] : [] };
  }
}
