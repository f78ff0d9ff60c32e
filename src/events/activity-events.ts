import { Injectable, Logger } from '@nestjs/common';
import type { Meter } from '../common/meters.js';

export type ActivityEvent =
  | { type: 'api_key.minted' }
  | { type: 'api_key.revoked' }
  | { type: 'api_key.rotated' }
  | { type: 'usage.charged'; meter: Meter; count: number }
  | { type: 'usage.refused'; meter: Meter; count: number }
  | { type: 'usage.refunded'; meter: Meter; count: number }
  | { type: 'usage.refunds_pending'; pending: number };

type Listener = (event: ActivityEvent) => void;

/**
 * What the services did (mints, revokes, charges, refusals), for whoever wants to count it.
 * Like AuthMetrics it stays free of any metrics library: the standalone app subscribes and
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
