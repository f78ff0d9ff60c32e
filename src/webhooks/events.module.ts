import { Module, type DynamicModule } from '@nestjs/common';
import { EventDeliveryModule } from './event-delivery.module.js';
import type { EventsSettings } from './events-settings.js';
import { WebhooksModule } from './webhooks.module.js';

export interface EventsModuleOptions {
  events: EventsSettings;
}

/**
 * Events out, for the standalone server and for a host: the outbox relay and delivery workers on
 * pg-boss, and the webhook routes (WebhooksModule). pg-boss and standardwebhooks are optional peer
 * dependencies, loaded when the workers start. Not global; registers no guard or filter.
 */
@Module({})
export class EventsModule {
  static register(options: EventsModuleOptions): DynamicModule {
    const delivery = EventDeliveryModule.register(options.events);
    return {
      module: EventsModule,
      imports: [delivery, WebhooksModule.register(delivery)],
      exports: [delivery],
    };
  }
}
