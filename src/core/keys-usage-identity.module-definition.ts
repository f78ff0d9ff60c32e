import { ConfigurableModuleBuilder, type Type } from '@nestjs/common';
import type { OrgDirectory } from '../directory/org-directory.js';
import type { KeysUsageIdentityOptions } from './keys-usage-identity.options.js';

/** Decided when the module is imported (they shape the module graph), so not async. */
export interface KeysUsageIdentityExtras {
  /** Mount this module's HTTP controllers (default true). Guards, decorators and services work either way. */
  mountControllers?: boolean;
  /** Prefix for this module's routes, e.g. `account` → `/account/api-keys` (default none). */
  routePrefix?: string;
  /** A host's own OrgDirectory implementation (default: this module's tables). */
  orgDirectory?: Type<OrgDirectory>;
}

export const {
  ConfigurableModuleClass: KeysUsageIdentityConfigurableModule,
  MODULE_OPTIONS_TOKEN: KEYS_USAGE_IDENTITY_OPTIONS,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<KeysUsageIdentityOptions>({ moduleName: 'KeysUsageIdentity' })
  .setClassMethodName('forRoot')
  .setExtras<KeysUsageIdentityExtras>({ mountControllers: true }, (definition) => definition)
  .build();
