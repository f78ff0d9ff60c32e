import { Global, Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { EventOutbox } from '../events/event-outbox.js';
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
 * revocation. Global only so that the key and usage services see EventOutbox (and so write their
 * events): without this module nothing is written to the outbox. Registers no global guard or filter.
 */
@Global()
@Module({})
export class EventsModule {
  static register(options: EventsModuleOptions): DynamicModule {
    return {
      module: EventsModule,
      imports: [TypeOrmModule.forFeature([WebhookEndpointEntity, WebhookDeliveryEntity])],
      controllers: [WebhooksController, LeakedKeysController],
      providers: [
        { provide: EVENTS_SETTINGS, useValue: options.events },
        { provide: GITHUB_SCANNING_KEYS, useValue: new GithubScanningKeys(options.githubKeys) },
        { provide: REPORT_LIMIT, useValue: options.reportLimit },
        ReportThrottle,
        EventOutbox,
        WebhooksRepository,
        WebhookDispatcher,
        WebhooksService,
        LeakedKeysService,
      ],
      exports: [EventOutbox, WebhookDispatcher, WebhooksService, LeakedKeysService],
    };
  }
}
