import { Global, Module } from '@nestjs/common';
import { EventOutbox } from './event-outbox.js';

/**
 * Turns events on for whatever changes data in this process: the key, usage and directory
 * services write their events to the outbox only when EventOutbox can be injected. The server
 * (EventsModule) and the operator CLI import it; the relay runs in the server.
 */
@Global()
@Module({ providers: [EventOutbox], exports: [EventOutbox] })
export class EventOutboxModule {}
