import { Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule, type TypeOrmModuleOptions } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { moduleOptionsFrom, type AppConfig } from '../config/app-config.js';
import { KeysUsageIdentityModule } from '../core/keys-usage-identity.module.js';
import { DirectoryAdminRepository } from '../directory/directory-admin.repository.js';
import { DirectoryAdminService } from './directory-admin.service.js';
import { EventOutboxModule } from '../events/event-outbox.module.js';
import { PersonalDataModule } from '../personal-data/personal-data.module.js';
import { OrgVersionRepository } from '../versioning/org-version.repository.js';

/** The CLI's context: the same module as the server, without HTTP. */
@Module({})
export class AdminModule {
  static register(config: AppConfig, dataSource: () => Promise<DataSource>): DynamicModule {
    return {
      module: AdminModule,
      imports: [
        // openDatabase retries what can heal and fails fast on the rest; no second retry loop here.
        TypeOrmModule.forRootAsync({
          useFactory: (): TypeOrmModuleOptions => ({ toRetry: () => false }),
          dataSourceFactory: () => dataSource(),
        }),
        // A CLI command serves no verification (it holds no lease, though it waits for the servers'
        // acknowledgements) and is short-lived: it never prunes usage history (the servers do).
        KeysUsageIdentityModule.forRoot(adminOptions(config)),
        // Events (member.removed, usage.threshold) go to the outbox; the server's relay delivers them.
        EventOutboxModule,
        PersonalDataModule.register(),
      ],
      providers: [DirectoryAdminRepository, DirectoryAdminService, OrgVersionRepository],
    };
  }
}

function adminOptions(config: AppConfig) {
  const options = moduleOptionsFrom(config);
  return {
    ...options,
    usage: { ...options.usage, pruneEveryMs: 0 },
    verificationCache: { enabled: false },
    mountControllers: false,
  };
}
