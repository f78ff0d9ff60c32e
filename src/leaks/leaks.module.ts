import { Module, type DynamicModule } from '@nestjs/common';
import { ApiKeyStoreModule } from '../api-keys/api-key-store.module.js';
import { GITHUB_SCANNING_KEYS, GithubScanningKeys } from './github-keys.js';
import { LeakedKeysController } from './leaked-keys.controller.js';
import { LeakedKeysService } from './leaked-keys.service.js';
import { REPORT_LIMIT, ReportThrottle } from './report-throttle.js';

export interface LeaksModuleOptions {
  /** GITHUB_SECRET_SCANNING_KEYS: JSON list of {key_identifier, key}. */
  githubKeys?: string;
  /** Reports a client address may make to POST /credentials/revoke per minute. */
  reportLimit: number;
}

/** Leaked keys, revoked by whoever finds them: POST /credentials/revoke and GitHub's secret scanning. */
@Module({})
export class LeaksModule {
  static register(options: LeaksModuleOptions): DynamicModule {
    return {
      module: LeaksModule,
      imports: [ApiKeyStoreModule],
      controllers: [LeakedKeysController],
      providers: [
        { provide: GITHUB_SCANNING_KEYS, useValue: new GithubScanningKeys(options.githubKeys) },
        { provide: REPORT_LIMIT, useValue: options.reportLimit },
        ReportThrottle,
        LeakedKeysService,
      ],
      exports: [LeakedKeysService],
    };
  }
}
