import { Module, type DynamicModule } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { ApiKeyStoreModule } from './api-key-store.module.js';
import { ApiKeysEnabledGuard } from './api-keys-enabled.guard.js';
import { ApiKeysController } from './api-keys.controller.js';
import { ApiKeysService } from './api-keys.service.js';
import { OrgApiKeysController } from './org-api-keys.controller.js';
import { MintRateGuard } from './mint-rate.guard.js';
import { KeyChanges } from './key-changes.js';
import { KeySettingsService } from './key-settings.service.js';
import { KeySettingsController } from './key-settings.controller.js';

@Module({
  imports: [AuthModule, AuditModule, DatabaseModule, ApiKeyStoreModule],
  providers: [KeyChanges, ApiKeysService, KeySettingsService, ApiKeysEnabledGuard, MintRateGuard],
  exports: [ApiKeysService, KeySettingsService],
})
export class ApiKeysModule {
  /** The same module with its HTTP routes mounted. */
  static withHttp(): DynamicModule {
    return { module: ApiKeysModule, controllers: [ApiKeysController, OrgApiKeysController, KeySettingsController] };
  }
}
