import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { ApiKeyStoreModule } from '../api-keys/api-key-store.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { VersioningModule } from '../versioning/versioning.module.js';
import { ServiceAccountRepository } from './service-account.repository.js';
import { ServiceKeysController } from './service-keys.controller.js';
import { ServiceKeysService } from './service-keys.service.js';

/**
 * Service keys: the org's own keys. `apiKeys` is the very ApiKeysModule (or its `withHttp()`)
 * the root imports, so the unit of work (KeyChanges) and the per-user mint budget are one.
 */
@Module({})
export class ServiceKeysModule {
  static register(apiKeys: Type | DynamicModule, http: boolean): DynamicModule {
    return {
      module: ServiceKeysModule,
      // VersioningModule: for the interceptor @Versioned binds to the routes.
      imports: [apiKeys, AuthModule, ApiKeyStoreModule, ...(http ? [VersioningModule] : [])],
      providers: [ServiceAccountRepository, ServiceKeysService],
      controllers: http ? [ServiceKeysController] : [],
      exports: [ServiceKeysService],
    };
  }
}
