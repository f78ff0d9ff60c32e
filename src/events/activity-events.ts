import { Injectable, Logger } from '@nestjs/common';

export type ActivityEvent =
  | { type: 'api_key.minted' }
  | { type: 'api_key.revoked' }
  | { type: 'api_key.rotated' }
  | { type: 'api_key.updated' }
  // The meter: one of the contract's four or one the deployment defines.
  | { type: 'usage.charged'; meter: string; count: number }
  | { type: 'usage.refused'; meter: string; count: number }
  | { type: 'usage.refunded'; meter: string; count: number }
  | { type: 'usage.refunds_pending'; pending: number }
  /** Events were committed to the outbox: a relay in this process moves them now, not at its next poll. */
  | { type: 'outbox.written' };

type Listener = (event: ActivityEvent) => void;

/**
 * The one in-process signal of this module: what the services did (mints, revokes, charges,
 * refusals, events written to the outbox), for whoever wants to act on it at once in this
 * process (the metrics, the outbox relay). Durable events, for other processes and webhooks, are
 * the outbox's (EventOutbox). Free of any metrics library: the standalone app subscribes and
 * exports Prometheus counters; a host may subscribe with its own. Carries no ids or secrets.
 */
@Injectable()
export class ActivityEvents {
  private readonly logger = new Logger(ActivityEvents.name);
  private readonly listeners: Listener[] = [];

  on(listener: Listener): void {
    this.listeners.push(listener);
  }

  emit(event: ActivityEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        // A broken subscriber must never fail the request that did the work.
        this.logger.warn(`activity listener failed on ${event.type}: ${(error as Error).message}`);
      }
    }
  }
}
