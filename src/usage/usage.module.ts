import { Module, type DynamicModule } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { ChargeInterceptor } from './charges.decorator.js';
import { ApiKeyUsageController, OrgKeyUsageController } from './key-usage.controller.js';
import { UsageController } from './usage.controller.js';
import { UsageExporter } from './usage-export.js';
import { UsageHistoryService } from './usage-history.service.js';
import { UsageRetention } from './usage-retention.js';
import { UsageService } from './usage.service.js';

/** The metering engine. Exports UsageService and the interceptor behind `@Charges()`. */
@Module({
  imports: [AuthModule],
  providers: [UsageService, ChargeInterceptor, UsageHistoryService, UsageRetention, UsageExporter],
  exports: [UsageService, ChargeInterceptor, UsageHistoryService, UsageRetention, UsageExporter],
})
export class UsageModule {
  static withHttp(): DynamicModule {
    return { module: UsageModule, controllers: [UsageController, ApiKeyUsageController, OrgKeyUsageController] };
  }
}
