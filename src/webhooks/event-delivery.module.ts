import { Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { EventOutboxModule } from '../events/event-outbox.module.js';
import { EVENTS_SETTINGS, type EventsSettings } from './events-settings.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import { WebhookDeliveryEntity, WebhookEndpointEntity } from './webhook.entities.js';
import { WebhooksRepository } from './webhooks.repository.js';

/**
 * The delivery side that EventsModule and WebhooksModule share (built once by EventsModule and
 * imported by both): the settings, the endpoint store and the dispatcher (relay and workers).
 */
@Module({})
export class EventDeliveryModule {
  static register(settings: EventsSettings): DynamicModule {
    return {
      module: EventDeliveryModule,
      imports: [EventOutboxModule, TypeOrmModule.forFeature([WebhookEndpointEntity, WebhookDeliveryEntity])],
      providers: [{ provide: EVENTS_SETTINGS, useValue: settings }, WebhooksRepository, WebhookDispatcher],
      exports: [EVENTS_SETTINGS, WebhooksRepository, WebhookDispatcher],
    };
  }
}
