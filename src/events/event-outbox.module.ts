import { Module } from '@nestjs/common';
import { EventOutbox } from './event-outbox.js';

/**
 * Turns events on in this process: importing it enables the EventOutbox that CoreModule provides,
 * so the key, usage and directory services write their events to the outbox from then on. The
 * server's events module and the operator CLI import it; the relay runs in the server. Nothing
 * here is global; the outbox itself is the core's.
 */
@Module({})
export class EventOutboxModule {
  constructor(outbox: EventOutbox) {
    outbox.enable();
  }
}
