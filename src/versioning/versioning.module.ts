import { Module, type OnModuleInit } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { AuthModule } from '../auth/auth.module.js';
import { CoherenceModule } from '../coherence/coherence.module.js';
import { DeprecationUsage } from './deprecation-usage.js';
import { VersionedOperation } from './operation-versioning.js';
import { OrgVersionCache } from './org-version.cache.js';
import { OrgVersionRepository } from './org-version.repository.js';
import { VersionEdge } from './version-edge.js';
import { VersioningPolicy } from './versioning-policy.js';

/**
 * Dated API versions. Part of the library: a handler declared `@Versioned(operationId)` gets the
 * interceptor that converts its requests and answers, wherever it is mounted (a host's included;
 * its module imports this one). Registers nothing global; the standalone app adds the Fastify
 * hooks every answer goes through (src/http/versioning-hooks.ts).
 */
@Module({
  imports: [AuthModule, CoherenceModule, DiscoveryModule],
  providers: [
    { provide: VersioningPolicy, useFactory: () => new VersioningPolicy() },
    OrgVersionRepository,
    OrgVersionCache,
    DeprecationUsage,
    VersionEdge,
  ],
  // VersionEdge: what OperationVersioning, bound by @Versioned in the importing module, needs.
  exports: [VersioningPolicy, OrgVersionRepository, DeprecationUsage, VersionEdge],
})
export class VersioningModule implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly reflector: Reflector,
    private readonly policy: VersioningPolicy,
  ) {}

  /**
   * The start-up check: every operation a version change names is a handler declared
   * `@Versioned` with that operationId, else the application does not start (a renamed operation
   * or a forgotten decorator cannot silently stop converting). An application that mounts no
   * versioned handler (the library without its HTTP routes) has nothing to convert.
   */
  onModuleInit(): void {
    const declared = versionedOperations(this.discovery, this.reflector);
    if (declared.size === 0) return;
    const named = new Set(this.policy.changes.flatMap((c) => Object.keys(c.operations)));
    const missing = [...named].filter((id) => !declared.has(id));
    if (missing.length > 0)
      throw new Error(
        `Version changes name operations no handler declares with @Versioned: ${missing.join(', ')} ` +
          `(declared: ${[...declared].sort().join(', ')})`,
      );
  }
}

/** The operationIds the application's controller handlers declare with `@Versioned`. */
export function versionedOperations(discovery: DiscoveryService, reflector: Reflector): Set<string> {
  const scanner = new MetadataScanner();
  const found = new Set<string>();
  for (const wrapper of discovery.getControllers()) {
    const prototype = (wrapper.metatype as { prototype?: object } | null)?.prototype;
    if (!prototype) continue;
    for (const name of scanner.getAllMethodNames(prototype)) {
      const id = reflector.get(VersionedOperation, (prototype as Record<string, () => unknown>)[name]);
      if (id) found.add(id);
    }
  }
  return found;
}
