import { Module, type DynamicModule } from '@nestjs/common';
import { WebhookSendThrottle } from './webhook-send-throttle.js';
import { WebhooksController } from './webhooks.controller.js';
import { WebhooksService } from './webhooks.service.js';

/** Webhook endpoints of an org and their delivery log, over HTTP; `delivery` is EventsModule's delivery side. */
@Module({})
export class WebhooksModule {
  static register(delivery: DynamicModule): DynamicModule {
    return {
      module: WebhooksModule,
      imports: [delivery],
      controllers: [WebhooksController],
      providers: [WebhooksService, WebhookSendThrottle],
      exports: [WebhooksService],
    };
  }
}
