import { Module, type DynamicModule } from '@nestjs/common';
import { ApiKeyStoreModule } from '../api-keys/api-key-store.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { PeriodicJobsModule } from '../common/periodic-jobs.js';
import { ApiKeyUsageController, OrgKeyUsageController } from './key-usage.controller.js';
import { UsageController } from './usage.controller.js';
import { UsageExporter } from './usage-export.js';
import { UsageHistoryService } from './usage-history.service.js';
import { UsageRetention } from './usage-retention.js';
import { UsageService } from './usage.service.js';
import { UsageLeasesModule } from './usage-leases.module.js';
import { UsageOrgMeter } from './usage-org-meter.js';

/** The metering engine; owns usage_counters, usage_attributions, the deployment meters' usage_meter_counters and usage_meter_attribution, and the instances' usage_leases. Exports UsageService and UsageOrgMeter, what `@Charges()` charges through (budgets' OrgMeter port, bound by the library root). */
@Module({
  imports: [AuthModule, ApiKeyStoreModule, PeriodicJobsModule, UsageLeasesModule],
  providers: [UsageService, UsageOrgMeter, UsageHistoryService, UsageRetention, UsageExporter],
  exports: [UsageService, UsageOrgMeter, UsageHistoryService, UsageRetention, UsageExporter],
})
export class UsageModule {
  static withHttp(): DynamicModule {
    return { module: UsageModule, controllers: [UsageController, ApiKeyUsageController, OrgKeyUsageController] };
  }
}
