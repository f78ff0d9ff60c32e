import { ConfigurableModuleBuilder, type Type } from '@nestjs/common';
import type { OrgDirectory } from '../directory/org-directory.js';
import type { KeysUsageIdentityOptions } from '../settings/keys-usage-identity.options.js';

/** Decided when the module is imported (they shape the module graph), so not async. */
export interface KeysUsageIdentityExtras {
  /** Mount this module's HTTP controllers (default true). Guards, decorators and services work either way. */
  mountControllers?: boolean;
  /** Prefix for this module's routes, e.g. `account` → `/account/api-keys` (default none). */
  routePrefix?: string;
  /**
   * A host's own OrgDirectory implementation (default: this module's tables). It is built inside
   * this module: whatever it injects must come from a module in `forRootAsync({ imports })` or a global one.
   */
  orgDirectory?: Type<OrgDirectory>;
  /**
   * Make the guards (which charge `@Charges()`) and `UsageService` visible to every module of
   * the host (default true), so any controller can use the decorators. Providers only: nothing
   * global acts on the host's routes. With false, only modules that import this one see them.
   */
  isGlobal?: boolean;
}

export const {
  ConfigurableModuleClass: KeysUsageIdentityConfigurableModule,
  MODULE_OPTIONS_TOKEN: KEYS_USAGE_IDENTITY_OPTIONS,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<KeysUsageIdentityOptions>({ moduleName: 'KeysUsageIdentity' })
  .setClassMethodName('forRoot')
  // Every extra is named here, so Nest keeps them all out of the options object it provides.
  .setExtras<KeysUsageIdentityExtras>(
    { mountControllers: true, routePrefix: undefined, orgDirectory: undefined, isGlobal: true },
    (definition) => definition,
  )
  .build();

/** `KeysUsageIdentityModule.forRoot(options)`: the options and the import-time extras. */
export type KeysUsageIdentityModuleOptions = typeof OPTIONS_TYPE;
/** `KeysUsageIdentityModule.forRootAsync({ imports, inject, useFactory })` plus the import-time extras. */
export type KeysUsageIdentityAsyncOptions = typeof ASYNC_OPTIONS_TYPE;
