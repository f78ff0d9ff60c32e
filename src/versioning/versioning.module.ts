import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { DeprecationUsage } from './deprecation-usage.js';
import { OrgVersionCache } from './org-version.cache.js';
import { OrgVersionRepository } from './org-version.repository.js';
import { VersionEdge } from './version-edge.js';
import { VersioningPolicy } from './versioning-policy.js';

/**
 * Dated API versions. Registers nothing global: the standalone app installs VersionEdge as
 * Fastify hooks (src/http/versioning-hooks.ts).
 */
@Module({
  imports: [AuthModule],
  providers: [{ provide: VersioningPolicy, useFactory: () => new VersioningPolicy() }, OrgVersionRepository, OrgVersionCache, DeprecationUsage, VersionEdge],
  exports: [VersioningPolicy, OrgVersionRepository, DeprecationUsage, VersionEdge],
})
export class VersioningModule {}
