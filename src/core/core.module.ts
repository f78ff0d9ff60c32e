import { Global, Module, type DynamicModule, type Provider, type Type } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApiKeyRepository } from '../api-keys/api-key.repository.js';
import { Clock } from '../common/clock.js';
import { ENTITIES } from './schema.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { UsageRepository } from '../usage/usage.repository.js';
import { ActivityEvents } from '../events/activity-events.js';
import { KEYS_USAGE_IDENTITY_OPTIONS } from './keys-usage-identity.module-definition.js';
import type { KeysUsageIdentityOptions } from '../settings/keys-usage-identity.options.js';
import { Settings } from '../settings/settings.js';

/**
 * Settings and persistence shared by the feature modules. Global only so the feature modules
 * see it; it exports this module's own tokens and registers nothing that acts on a host's routes.
 */
@Global()
@Module({})
export class CoreModule {
  static register(optionsProviders: Provider[], imports: DynamicModule['imports'], directory: Type<OrgDirectory>): DynamicModule {
    return {
      module: CoreModule,
      imports: [...(imports ?? []), TypeOrmModule.forFeature(ENTITIES)],
      providers: [
        ...optionsProviders,
        {
          provide: Settings,
          inject: [KEYS_USAGE_IDENTITY_OPTIONS],
          useFactory: (options: KeysUsageIdentityOptions) => new Settings(options),
        },
        { provide: Clock, inject: [Settings], useFactory: (s: Settings) => s.clock },
        ActivityEvents,
        ApiKeyRepository,
        UsageRepository,
        directory,
        { provide: OrgDirectory, useExisting: directory },
      ],
      exports: [Settings, Clock, ActivityEvents, ApiKeyRepository, UsageRepository, OrgDirectory, KEYS_USAGE_IDENTITY_OPTIONS],
    };
  }
}
