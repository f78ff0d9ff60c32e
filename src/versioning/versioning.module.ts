import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { DeprecationUsage } from './deprecation-usage.js';
import { OrgVersionCache } from './org-version.cache.js';
import { OrgVersionRepository } from './org-version.repository.js';
import { VersioningInterceptor } from './versioning.interceptor.js';
import { VersioningPolicy } from './versioning-policy.js';

/**
 * Dated API versions. Registers no global interceptor: the standalone app applies
 * VersioningInterceptor to every route (APP_INTERCEPTOR); a host may do the same.
 */
@Module({
  imports: [AuthModule],
  providers: [{ provide: VersioningPolicy, useFactory: () => new VersioningPolicy() }, OrgVersionRepository, OrgVersionCache, DeprecationUsage, VersioningInterceptor],
  exports: [VersioningPolicy, OrgVersionRepository, DeprecationUsage, VersioningInterceptor],
})
export class VersioningModule {}
