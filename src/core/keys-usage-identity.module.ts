import { Injectable, Module, type DynamicModule, type OnModuleInit } from '@nestjs/common';
import { ModuleRef, ModulesContainer, RouterModule } from '@nestjs/core';
import { ApiKeysModule } from '../api-keys/api-keys.module.js';
import { AuditModule } from '../audit/audit.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { CoherenceModule } from '../coherence/coherence.module.js';
import { TypeOrmOrgDirectory } from '../directory/typeorm-org-directory.js';
import { IdentityModule } from '../identity/identity.module.js';
import { OrgsModule } from '../orgs/orgs.module.js';
import { ServiceKeysModule } from '../service-keys/service-keys.module.js';
import { KeyPoliciesModule } from '../key-policies/key-policies.module.js';
import { UsageModule } from '../usage/usage.module.js';
import { VersioningModule } from '../versioning/versioning.module.js';
import { ScopeRegistry } from '../common/scope-registry.js';
import { MeterRegistry } from '../common/meter-registry.js';
import {
  checkDataSourceSchema,
  checkDirectoryScope,
  checkMigrated,
  checkRouteMeters,
  checkRouteScopes,
  checkSingleRoot,
} from './boot-checks.js';
import { CoreModule } from './core.module.js';
import { KeysUsageIdentityFeatureModule } from './keys-usage-identity-feature.module.js';
import {
  KeysUsageIdentityConfigurableModule,
  type KeysUsageIdentityAsyncOptions,
  type KeysUsageIdentityExtras,
  type KeysUsageIdentityModuleOptions,
} from './keys-usage-identity.module-definition.js';

/** Refuses, at boot and with a message that says what to do, wirings that would fail later. */
@Injectable()
class WiringCheck implements OnModuleInit {
  constructor(
    private readonly modules: ModulesContainer,
    private readonly moduleRef: ModuleRef,
    private readonly scopes: ScopeRegistry,
    private readonly meters: MeterRegistry,
  ) {
    checkSingleRoot(KeysUsageIdentityModule, modules);
  }

  async onModuleInit(): Promise<void> {
    checkDirectoryScope(this.moduleRef);
    checkRouteScopes(this.modules, this.scopes);
    checkRouteMeters(this.modules, this.meters);
    await checkDataSourceSchema(this.moduleRef);
    await checkMigrated(this.moduleRef);
  }
}

/**
 * The whole account surface as one module: `forRoot(options)` or `forRootAsync({ imports,
 * inject, useFactory })`. Uses the host's TypeORM DataSource; registers no global guard,
 * filter, pipe, interceptor or prefix.
 */
@Module({})
export class KeysUsageIdentityModule extends KeysUsageIdentityConfigurableModule {
  static override forRoot(options: KeysUsageIdentityModuleOptions): DynamicModule {
    return KeysUsageIdentityModule.assemble(super.forRoot(options), options);
  }

  static override forRootAsync(options: KeysUsageIdentityAsyncOptions): DynamicModule {
    return KeysUsageIdentityModule.assemble(super.forRootAsync(options), options);
  }

  /**
   * For a host feature module that wants the guards, decorators, `@Charges()` and the services
   * without a second copy of the module: import `forRoot`/`forRootAsync` once in the root module,
   * and this wherever it is needed (required when `isGlobal: false`).
   */
  static forFeature(): DynamicModule {
    return { module: KeysUsageIdentityFeatureModule };
  }

  private static assemble(base: DynamicModule, extras: KeysUsageIdentityExtras): DynamicModule {
    const mount = extras.mountControllers !== false;
    // One object for the key feature: the service-key and policy features import this very module, not a copy.
    const apiKeys = mount ? ApiKeysModule.withHttp() : ApiKeysModule;
    const serviceKeys = ServiceKeysModule.register(apiKeys, mount);
    const keyPolicies = KeyPoliciesModule.register(apiKeys, mount);
    const features = mount
      ? [
          apiKeys,
          UsageModule.withHttp(),
          IdentityModule.withHttp(),
          AuditModule.withHttp(),
          OrgsModule.withHttp(),
          serviceKeys,
          keyPolicies,
        ]
      : [apiKeys, UsageModule, IdentityModule, AuditModule, OrgsModule, serviceKeys, keyPolicies];
    // RouterModule prefixes only the modules it names, so the host's own routes keep their paths.
    const prefix = extras.routePrefix?.replace(/^\/+|\/+$/g, '') ?? '';
    const routes =
      mount && prefix
        ? [
            RouterModule.register([
              {
                path: prefix,
                children: [
                  ApiKeysModule,
                  UsageModule,
                  IdentityModule,
                  AuditModule,
                  OrgsModule,
                  ServiceKeysModule,
                  KeyPoliciesModule,
                ],
              },
            ]),
          ]
        : [];
    return {
      module: KeysUsageIdentityModule,
      global: extras.isGlobal !== false,
      imports: [
        CoreModule.register(base.providers ?? [], base.imports, extras.orgDirectory ?? TypeOrmOrgDirectory),
        CoherenceModule,
        AuthModule,
        ...features,
        ...routes,
        // Dated versions: the policy, the org pins, and the start-up check of the @Versioned handlers.
        VersioningModule,
      ],
      providers: [WiringCheck],
      // CoherenceModule: VerificationInvalidation, for a change made outside this module's services.
      exports: [CoherenceModule, AuthModule, UsageModule, ApiKeysModule, IdentityModule, AuditModule, OrgsModule],
    };
  }
}
