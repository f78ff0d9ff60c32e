import { Global, Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApiKeyStoreModule } from '../api-keys/api-key-store.module.js';
import { EventOutboxModule } from '../events/event-outbox.module.js';
import { LeakedKeysController } from '../leaks/leaked-keys.controller.js';
import { LeakedKeysService } from '../leaks/leaked-keys.service.js';
import { GITHUB_SCANNING_KEYS, GithubScanningKeys } from '../leaks/github-keys.js';
import { REPORT_LIMIT, ReportThrottle } from '../leaks/report-throttle.js';
import { EVENTS_SETTINGS, type EventsSettings } from './events-settings.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import { WebhookDeliveryEntity, WebhookEndpointEntity } from './webhook.entities.js';
import { WebhooksController } from './webhooks.controller.js';
import { WebhooksRepository } from './webhooks.repository.js';
import { WebhooksService } from './webhooks.service.js';

export interface EventsModuleOptions {
  events: EventsSettings;
  /** GITHUB_SECRET_SCANNING_KEYS: JSON list of {key_identifier, key}. */
  githubKeys?: string;
  /** Reports a client address may make to POST /credentials/revoke per minute. */
  reportLimit: number;
}

/**
 * Events out: the outbox relay and delivery workers (pg-boss), webhook endpoints, and leaked-key
 * revocation. It imports EventOutboxModule, which turns event writing on for the key, usage and
 * directory services. Registers no global guard or filter.
 */
@Global()
@Module({})
export class EventsModule {
  static register(options: EventsModuleOptions): DynamicModule {
    return {
      module: EventsModule,
      imports: [EventOutboxModule, ApiKeyStoreModule, TypeOrmModule.forFeature([WebhookEndpointEntity, WebhookDeliveryEntity])],
      controllers: [WebhooksController, LeakedKeysController],
      providers: [
        { provide: EVENTS_SETTINGS, useValue: options.events },
        { provide: GITHUB_SCANNING_KEYS, useValue: new GithubScanningKeys(options.githubKeys) },
        { provide: REPORT_LIMIT, useValue: options.reportLimit },
        ReportThrottle,
        WebhooksRepository,
        WebhookDispatcher,
        WebhooksService,
        LeakedKeysService,
      ],
      exports: [WebhookDispatcher, WebhooksService, LeakedKeysService],
    };
  }
}
