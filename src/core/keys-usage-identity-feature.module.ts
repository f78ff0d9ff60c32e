import { Module } from '@nestjs/common';
import { ApiKeysModule } from '../api-keys/api-keys.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { CoherenceModule } from '../coherence/coherence.module.js';
import { UsageModule } from '../usage/usage.module.js';

/**
 * What `KeysUsageIdentityModule.forFeature()` gives a feature module of the host: the guards
 * behind the decorators (which also charge `@Charges()`), `UsageService`, `ApiKeysService` and
 * `VerificationInvalidation`.
 * It mounts no route and reads its settings from the one `forRoot` of the root module.
 */
@Module({
  imports: [CoherenceModule, AuthModule, UsageModule, ApiKeysModule],
  exports: [CoherenceModule, AuthModule, UsageModule, ApiKeysModule],
})
export class KeysUsageIdentityFeatureModule {}
