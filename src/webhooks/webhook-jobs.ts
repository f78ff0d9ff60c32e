import { createHash } from 'node:crypto';
import type { EventsSettings } from './events-settings.js';

/*
 * The job queue's names, sizes and messages (pg-boss): what the dispatcher enqueues, relays and
 * works, and what the service enqueues for a test or a retried delivery.
 */

export const DELIVER_QUEUE = 'webhook-deliver';
export const EXPIRY_SCAN_QUEUE = 'events-expiry-scan';
/** Outbox rows one relay transaction moves. */
export const RELAY_BATCH = 100;
/** Keys one expiry-scan statement marks. */
export const SCAN_BATCH = 500;
export const DAY_MS = 86_400_000;
/** Deliveries one instance runs at once (each org holds at most `orgConcurrency` of them). */
export const DELIVERY_SLOTS = 4;
/** How long the delivery log keeps an attempt. */
export const DELIVERY_RETENTION_DAYS = 30;

/** The message a delivery job carries: the event as receivers get it, and where it goes. */
export interface DeliverJob {
  endpointId: string;
  event: { id: string; type: string; timestamp: string; data: Record<string, unknown> };
}

/** A stable job id per (event, endpoint): a relay that runs twice cannot enqueue a delivery twice. */
export function deliveryJobId(eventId: string, endpointId: string): string {
  const h = createHash('sha256').update(`${eventId}:${endpointId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The expiry scan's windows: [ahead (null: already expired), not before, mark, event type]. */
export const EXPIRY_WINDOWS: ReadonlyArray<[number | null, number, string, 'api_key.expiring' | 'api_key.expired']> = [
  [7 * DAY_MS, DAY_MS, '7d', 'api_key.expiring'],
  [DAY_MS, 0, '1d', 'api_key.expiring'],
  [null, 0, 'expired', 'api_key.expired'],
];

/** pg-boss's retry options of a delivery job: exponential backoff with jitter, as configured. */
export function retryOptionsOf(s: EventsSettings) {
  return {
    retryLimit: s.retryLimit,
    retryDelay: s.retryDelaySeconds,
    retryBackoff: true,
    retryDelayMax: s.retryDelayMaxSeconds,
  };
}
