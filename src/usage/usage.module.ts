import { Module, type DynamicModule } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { ChargeInterceptor } from './charges.decorator.js';
import { UsageController } from './usage.controller.js';
import { UsageService } from './usage.service.js';
import { PendingRefunds } from './pending-refunds.js';

/** The metering engine. Exports UsageService and the interceptor behind `@Charges()`. */
@Module({
  imports: [AuthModule],
  providers: [UsageService, ChargeInterceptor, PendingRefunds],
  exports: [UsageService, ChargeInterceptor],
})
export class UsageModule {
  static withHttp(): DynamicModule {
    return { module: UsageModule, controllers: [UsageController] };
  }
}
