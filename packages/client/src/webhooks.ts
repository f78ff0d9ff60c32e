import type { Client } from 'openapi-fetch';
import { dataOf } from './errors.js';
import type { paths } from './generated/openapi.js';
import type {
  CreatedWebhook,
  CreateWebhookRequest,
  ListDeliveriesQuery,
  ListWebhooksQuery,
  RotatedWebhookSecret,
  RotateWebhookSecretRequest,
  UpdateWebhookRequest,
  Webhook,
  WebhookDeliveryList,
  WebhookList,
  WebhookQueued,
} from './types.js';

/** An org's webhook endpoints and their delivery log (owners and admins, browser session only). */
export class Webhooks {
  constructor(private readonly api: Client<paths>) {}

  private static at(orgId: string, id: string) {
    return { path: { org_id: orgId, id } };
  }

  /** Registers an endpoint; its signing secret (`secret`) is in this answer only. */
  create(orgId: string, body: CreateWebhookRequest): Promise<CreatedWebhook> {
    return dataOf(this.api.POST('/orgs/{org_id}/webhooks', { params: { path: { org_id: orgId } }, body }));
  }

  list(orgId: string, query: ListWebhooksQuery = {}): Promise<WebhookList> {
    return dataOf(this.api.GET('/orgs/{org_id}/webhooks', { params: { path: { org_id: orgId }, query } }));
  }

  get(orgId: string, id: string): Promise<Webhook> {
    return dataOf(this.api.GET('/orgs/{org_id}/webhooks/{id}', { params: Webhooks.at(orgId, id) }));
  }

  update(orgId: string, id: string, body: UpdateWebhookRequest): Promise<Webhook> {
    return dataOf(this.api.PATCH('/orgs/{org_id}/webhooks/{id}', { params: Webhooks.at(orgId, id), body }));
  }

  async delete(orgId: string, id: string): Promise<void> {
    await dataOf(this.api.DELETE('/orgs/{org_id}/webhooks/{id}', { params: Webhooks.at(orgId, id) }));
  }

  /** A new signing secret; the old one keeps signing beside it for `overlap_seconds`. */
  rotateSecret(orgId: string, id: string, body?: RotateWebhookSecretRequest): Promise<RotatedWebhookSecret> {
    return dataOf(
      this.api.POST('/orgs/{org_id}/webhooks/{id}/rotate-secret', { params: Webhooks.at(orgId, id), body }),
    );
  }

  /** Queues a `webhook.test` event to the endpoint. */
  test(orgId: string, id: string): Promise<WebhookQueued> {
    return dataOf(this.api.POST('/orgs/{org_id}/webhooks/{id}/test', { params: Webhooks.at(orgId, id) }));
  }

  /** The endpoint's delivery attempts, newest first. */
  deliveries(orgId: string, id: string, query: ListDeliveriesQuery = {}): Promise<WebhookDeliveryList> {
    return dataOf(
      this.api.GET('/orgs/{org_id}/webhooks/{id}/deliveries', { params: { ...Webhooks.at(orgId, id), query } }),
    );
  }

  /** Sends a delivery's event again. */
  retryDelivery(orgId: string, id: string, deliveryId: string): Promise<WebhookQueued> {
    return dataOf(
      this.api.POST('/orgs/{org_id}/webhooks/{id}/deliveries/{delivery_id}/retry', {
        params: { path: { org_id: orgId, id, delivery_id: deliveryId } },
      }),
    );
  }
}
