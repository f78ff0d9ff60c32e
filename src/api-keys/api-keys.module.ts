import { Module, type DynamicModule } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { CoherenceModule } from '../coherence/coherence.module.js';
import { PeriodicJobsModule } from '../common/periodic-jobs.js';
import { DatabaseModule } from '../database/database.module.js';
import { VersioningModule } from '../versioning/versioning.module.js';
import { ApiKeyStoreModule } from './api-key-store.module.js';
import { ApiKeysEnabledGuard } from './api-keys-enabled.guard.js';
import { ApiKeysController } from './api-keys.controller.js';
import { ApiKeysService } from './api-keys.service.js';
import { OrgApiKeysController } from './org-api-keys.controller.js';
import { MintRateGuard } from './mint-rate.guard.js';
import { KeyChanges } from './key-changes.js';
import { KeyMinting } from './key-minting.js';
import { LapsedSecretsJob } from './lapsed-secrets.job.js';
import { KeyApprovalsController } from './key-approvals.controller.js';
import { KeyApprovalsService } from './key-approvals.service.js';
import { KeySettingsService } from './key-settings.service.js';
import { KeySettingsController } from './key-settings.controller.js';
import { ScopeUsageController } from './scope-usage.controller.js';
import { ScopeUsageJob } from './scope-usage.job.js';
import { ScopeUsageService } from './scope-usage.service.js';
import { VerificationOutcomeRepository } from './verification-outcome.repository.js';
import { VerificationOutcomesController } from './verification-outcomes.controller.js';
import { VerificationOutcomesJob } from './verification-outcomes.job.js';
import { VerificationOutcomesService } from './verification-outcomes.service.js';

@Module({
  imports: [AuthModule, CoherenceModule, AuditModule, DatabaseModule, ApiKeyStoreModule, PeriodicJobsModule],
  providers: [
    KeyChanges,
    KeyMinting,
    ApiKeysService,
    KeySettingsService,
    ApiKeysEnabledGuard,
    MintRateGuard,
    LapsedSecretsJob,
    KeyApprovalsService,
    ScopeUsageService,
    ScopeUsageJob,
    VerificationOutcomeRepository,
    VerificationOutcomesService,
    VerificationOutcomesJob,
  ],
  // KeyChanges: the service-keys and key-policies features change keys through the same unit of work;
  // KeyMinting: service keys are minted and rotated the one way personal keys are.
  exports: [ApiKeysService, KeySettingsService, KeyChanges, KeyMinting],
})
export class ApiKeysModule {
  /** The same module with its HTTP routes mounted. */
  static withHttp(): DynamicModule {
    return {
      module: ApiKeysModule,
      // VersionEdge for the interceptor @Versioned binds to the routes a version change touches.
      imports: [VersioningModule],
      controllers: [
        ApiKeysController,
        OrgApiKeysController,
        KeyApprovalsController,
        KeySettingsController,
        ScopeUsageController,
        VerificationOutcomesController,
      ],
    };
  }
}
