import { Module, type DynamicModule } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { PeriodicJobsModule } from '../common/periodic-jobs.js';
import { AuditRetentionJob } from './audit-retention.job.js';
import { AuditController } from './audit.controller.js';
import { AuditRepository } from './audit.repository.js';
import { AuditService } from './audit.service.js';
import { RequestOriginInterceptor } from './request-origin.interceptor.js';

/**
 * The audit log: owns `audit_events`. Exports AuditService (record, read, export, prune) and
 * RequestOriginInterceptor. The transaction a change records its event in is the database
 * module's (Transactions).
 */
@Module({
  imports: [AuthModule, PeriodicJobsModule],
  providers: [AuditRepository, AuditService, AuditRetentionJob, RequestOriginInterceptor],
  exports: [AuditService, RequestOriginInterceptor],
})
export class AuditModule {
  static withHttp(): DynamicModule {
    return { module: AuditModule, controllers: [AuditController] };
  }
}
