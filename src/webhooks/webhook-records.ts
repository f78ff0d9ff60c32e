import type { WebhookDeliveryDto, WebhookDto } from './dto/webhook.dto.js';
import type { WebhookDeliveryEntity, WebhookEndpointEntity } from './webhook.entities.js';

/** The response shapes are the DTO classes themselves (one class per shape). */
export type WebhookRecord = WebhookDto;
export type DeliveryRecord = WebhookDeliveryDto;

export const toRecord = (w: WebhookEndpointEntity): WebhookRecord => ({
  id: w.id,
  org_id: w.orgId,
  url: w.url,
  description: w.description,
  event_types: w.eventTypes,
  enabled: w.enabled,
  ...(w.failingSince ? { failing_since: w.failingSince.toISOString() } : {}),
  ...(w.previousSecretExpiresAt ? { previous_secret_expires_at: w.previousSecretExpiresAt.toISOString() } : {}),
  created_at: w.createdAt.toISOString(),
  updated_at: w.updatedAt.toISOString(),
});

export const toDelivery = (d: WebhookDeliveryEntity): DeliveryRecord => ({
  id: d.id,
  event_id: d.eventId,
  event_type: d.eventType,
  attempt: d.attempt,
  status: d.status,
  ...(d.responseStatus !== null ? { response_status: d.responseStatus } : {}),
  latency_ms: d.latencyMs,
  ...(d.responseBody !== null ? { response_body: d.responseBody } : {}),
  ...(d.error !== null ? { error: d.error } : {}),
  created_at: d.createdAt.toISOString(),
});

/**
 * What a receiver answered, made storable: PostgreSQL `text` refuses U+0000 (the whole insert
 * fails) and would alter an unpaired surrogate; both become U+FFFD (the UTF-8 round trip does the surrogates).
 */
export function storableText(text: string | null): string | null {
  return text === null ? null : Buffer.from(text, 'utf8').toString('utf8').replaceAll('\u0000', '\uFFFD');
}
