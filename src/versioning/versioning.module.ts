import { Inject, Module, type NestModule } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { DeprecationUsage } from './deprecation-usage.js';
import { VersionedOperations } from './operation-versioning.js';
import { OrgVersionCache } from './org-version.cache.js';
import { OrgVersionRepository } from './org-version.repository.js';
import { VersionEdge } from './version-edge.js';
import { VersioningPolicy } from './versioning-policy.js';

/**
 * Dated API versions. Part of the library: the operations a version change touches get their
 * interceptor wherever they are mounted, a host's included. Registers nothing global; the
 * standalone app adds the Fastify hooks every answer goes through (src/http/versioning-hooks.ts).
 */
@Module({
  imports: [AuthModule],
  providers: [
    { provide: VersioningPolicy, useFactory: () => new VersioningPolicy() },
    OrgVersionRepository,
    OrgVersionCache,
    DeprecationUsage,
    VersionEdge,
    VersionedOperations,
  ],
  exports: [VersioningPolicy, OrgVersionRepository, DeprecationUsage, VersionEdge],
})
export class VersioningModule implements NestModule {
  // Undefined when the org directory is request-scoped (all that depends on it then is too): the
  // library's boot check refuses that wiring at onModuleInit, saying what to do.
  constructor(@Inject(VersionedOperations) private readonly operations: VersionedOperations | undefined) {}

  /**
   * Nest calls this at init, after every controller is built and just before it registers the
   * routes (and reads their interceptors): the one moment the binding can happen. No middleware.
   */
  configure(): void {
    this.operations?.bind();
  }
}
