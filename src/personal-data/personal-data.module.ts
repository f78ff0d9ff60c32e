import { Module, type DynamicModule } from '@nestjs/common';
import { ApiKeyStoreModule } from '../api-keys/api-key-store.module.js';
import { OperatorTokenGuard } from './operator-token.guard.js';
import { PersonalDataController } from './personal-data.controller.js';
import { PERSONAL_DATA_OPTIONS, type PersonalDataOptions } from './personal-data.options.js';
import { PersonalDataRepository } from './personal-data.repository.js';
import { PersonalDataService } from './personal-data.service.js';

/**
 * A person's data on request: export and erasure, for the operator. Not part of the library's
 * module: the standalone server mounts it with its routes (`withHttp`, ADMIN_API_TOKEN), the
 * operator CLI without (`register`). A host that wants it imports it the same way, beside a global
 * `KeysUsageIdentityModule.forRoot` (it uses the services that module exports).
 */
@Module({})
export class PersonalDataModule {
  static register(options: PersonalDataOptions = {}): DynamicModule {
    return {
      module: PersonalDataModule,
      // ApiKeysService, AuditService and VerificationInvalidation come from the one root module
      // (KeysUsageIdentityModule, global), as for LeaksModule: importing their modules again would build second copies.
      imports: [ApiKeyStoreModule],
      providers: [{ provide: PERSONAL_DATA_OPTIONS, useValue: options }, PersonalDataRepository, PersonalDataService],
      exports: [PersonalDataService],
    };
  }

  static withHttp(options: PersonalDataOptions): DynamicModule {
    const base = PersonalDataModule.register(options);
    return {
      ...base,
      providers: [...(base.providers ?? []), OperatorTokenGuard],
      controllers: [PersonalDataController],
    };
  }
}
