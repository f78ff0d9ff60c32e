import { randomUUID } from 'node:crypto';
import {
  BadRequestException,
  ConflictException,
  Inject,
  Injectable,
  NotFoundException,
  NotImplementedException,
  ServiceUnavailableException,
} from '@nestjs/common';
import { actorOf, AuditService } from '../audit/audit.service.js';
import { requireOrgAdmin } from '../auth/org-access.js';
import type { Principal } from '../auth/principal.js';
import { decodeCursor, MAX_PAGE_LIMIT, pageOf, type PageQuery } from '../common/pagination.js';
import { Settings } from '../settings/settings.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { TEST_EVENT_TYPE } from '../events/event-types.js';
import { Transactions } from '../database/transactions.js';
import {
  DEFAULT_SECRET_OVERLAP_SECONDS,
  type CreateWebhookDto,
  type RotateWebhookSecretDto,
  type UpdateWebhookDto,
} from './dto/webhook.dto.js';
import { EVENTS_SETTINGS, type EventsSettings } from './events-settings.js';
import { newSigningSecret, SecretBox } from './secret-box.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import type { DeliverJob } from './webhook-jobs.js';
import { WebhookSendThrottle } from './webhook-send-throttle.js';
import type { WebhookEndpointEntity } from './webhook.entities.js';
import { toDelivery, toRecord, type DeliveryRecord, type WebhookRecord } from './webhook-records.js';
import { WebhooksRepository } from './webhooks.repository.js';
import { ERRORS } from '../common/error-messages.js';

/** Webhook endpoints of an org, for its owners and admins; every change is audited. */
@Injectable()
export class WebhooksService {
  constructor(
    private readonly repo: WebhooksRepository,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
    private readonly dispatcher: WebhookDispatcher,
    private readonly audit: AuditService,
    private readonly transactions: Transactions,
    @Inject(EVENTS_SETTINGS) private readonly events: EventsSettings,
    private readonly throttle: WebhookSendThrottle,
  ) {}

  async create(
    principal: Principal,
    orgId: string,
    dto: CreateWebhookDto,
  ): Promise<WebhookRecord & { secret: string }> {
    await this.requireManager(principal, orgId);
    this.requireAllowedUrl(dto.url);
    const secret = newSigningSecret();
    const saved = await this.transactions.run(async (manager) => {
      const max = this.events.maxEndpointsPerOrg;
      if ((await this.repo.lockAndCountEndpoints(orgId, manager)) >= max)
        throw new ConflictException(ERRORS.tooManyWebhooks(max));
      const row = await this.repo.createEndpoint(
        {
          orgId,
          url: dto.url,
          description: dto.description ?? '',
          eventTypes: [...new Set(dto.event_types)],
          enabled: true,
          secretBox: this.box().seal(secret),
          createdBy: principal.userId,
        },
        manager,
      );
      await this.audit.record(manager, {
        orgId,
        action: 'webhook.created',
        ...actorOf(principal),
        target: { type: 'webhook', id: row.id },
        details: { url: row.url, event_types: row.eventTypes },
      });
      return row;
    });
    return { ...toRecord(saved), secret };
  }

  async list(
    principal: Principal,
    orgId: string,
    query: PageQuery,
  ): Promise<{ webhooks: WebhookRecord[]; next_cursor?: string }> {
    await this.requireManager(principal, orgId);
    const limit = query.limit ?? MAX_PAGE_LIMIT;
    const after = query.cursor ? decodeCursor(query.cursor) : null;
    const page = pageOf(await this.repo.listEndpoints(orgId, after, limit), limit);
    return { webhooks: page.items.map(toRecord), ...(page.nextCursor ? { next_cursor: page.nextCursor } : {}) };
  }

  async get(principal: Principal, orgId: string, id: string): Promise<WebhookRecord> {
    return toRecord(await this.endpoint(principal, orgId, id));
  }

  async update(principal: Principal, orgId: string, id: string, dto: UpdateWebhookDto): Promise<WebhookRecord> {
    await this.requireManager(principal, orgId);
    if (dto.url !== undefined) this.requireAllowedUrl(dto.url);
    const patch = {
      ...(dto.url !== undefined ? { url: dto.url } : {}),
      ...(dto.event_types !== undefined ? { eventTypes: [...new Set(dto.event_types)] } : {}),
      ...(dto.enabled !== undefined ? { enabled: dto.enabled } : {}),
      ...(dto.description !== undefined ? { description: dto.description } : {}),
    };
    const updated = await this.transactions.run(async (manager) => {
      const row = await this.repo.updateEndpoint(orgId, id, patch, this.settings.clock.now(), manager);
      if (row) {
        await this.audit.record(manager, {
          orgId,
          action: 'webhook.updated',
          ...actorOf(principal),
          target: { type: 'webhook', id },
          details: { ...dto },
        });
      }
      return row;
    });
    if (!updated) throw new NotFoundException(ERRORS.webhookNotFound);
    return toRecord(updated);
  }

  async remove(principal: Principal, orgId: string, id: string): Promise<void> {
    await this.requireManager(principal, orgId);
    const deleted = await this.transactions.run(async (manager) => {
      const found = await this.repo.deleteEndpoint(orgId, id, manager);
      if (found)
        await this.audit.record(manager, {
          orgId,
          action: 'webhook.deleted',
          ...actorOf(principal),
          target: { type: 'webhook', id },
          details: {},
        });
      return found;
    });
    if (!deleted) throw new NotFoundException(ERRORS.webhookNotFound);
  }

  /**
   * A new signing secret, returned once. For `overlap_seconds` the replaced secret keeps signing
   * beside it (two signatures in `webhook-signature`), so receivers can switch without a gap.
   */
  async rotateSecret(
    principal: Principal,
    orgId: string,
    id: string,
    dto: RotateWebhookSecretDto,
  ): Promise<WebhookRecord & { secret: string }> {
    await this.requireManager(principal, orgId);
    const secret = newSigningSecret();
    const overlap = dto.overlap_seconds ?? DEFAULT_SECRET_OVERLAP_SECONDS;
    const now = this.settings.clock.now();
    const previousUntil = overlap > 0 ? new Date(now.getTime() + overlap * 1000) : null;
    const rotated = await this.transactions.run(async (manager) => {
      const row = await this.repo.rotateSecret(orgId, id, this.box().seal(secret), previousUntil, now, manager);
      if (row) {
        await this.audit.record(manager, {
          orgId,
          action: 'webhook.secret_rotated',
          ...actorOf(principal),
          target: { type: 'webhook', id },
          details: { overlap_seconds: overlap },
        });
      }
      return row;
    });
    if (!rotated) throw new NotFoundException(ERRORS.webhookNotFound);
    return { ...toRecord(rotated), secret };
  }

  /** Queues a `webhook.test` event for this endpoint (delivered even while it is disabled). */
  async sendTest(principal: Principal, orgId: string, id: string): Promise<{ event_id: string }> {
    const endpoint = await this.endpoint(principal, orgId, id);
    const eventId = randomUUID();
    await this.queue(
      principal,
      orgId,
      'webhook.tested',
      { event_id: eventId },
      {
        endpointId: endpoint.id,
        event: {
          id: eventId,
          type: TEST_EVENT_TYPE,
          timestamp: this.settings.clock.now().toISOString(),
          data: { webhook_id: endpoint.id, org_id: orgId },
        },
      },
    );
    return { event_id: eventId };
  }

  async deliveries(
    principal: Principal,
    orgId: string,
    id: string,
    query: PageQuery,
  ): Promise<{ deliveries: DeliveryRecord[]; next_cursor?: string }> {
    const endpoint = await this.endpoint(principal, orgId, id);
    const limit = query.limit ?? MAX_PAGE_LIMIT;
    const after = query.cursor ? decodeCursor(query.cursor) : null;
    const page = pageOf(await this.repo.listDeliveries(endpoint.id, after, limit), limit);
    return { deliveries: page.items.map(toDelivery), ...(page.nextCursor ? { next_cursor: page.nextCursor } : {}) };
  }

  /**
   * Redelivers the event of a past attempt as a new job (same event id and payload, so receivers
   * can deduplicate). The payload is rebuilt from the attempt's job when pg-boss still holds it.
   */
  async retry(principal: Principal, orgId: string, id: string, deliveryId: string): Promise<{ event_id: string }> {
    const endpoint = await this.endpoint(principal, orgId, id);
    const delivery = await this.repo.findDelivery(endpoint.id, deliveryId);
    if (!delivery) throw new NotFoundException(ERRORS.deliveryNotFound);
    const job = await this.dispatcher.findJob(delivery.jobId);
    if (!job) throw new NotFoundException(ERRORS.deliveryEventGone);
    await this.queue(
      principal,
      orgId,
      'webhook.delivery_retried',
      { delivery_id: deliveryId, event_id: delivery.eventId, event_type: delivery.eventType },
      {
        endpointId: endpoint.id,
        event: job.event,
      },
    );
    return { event_id: delivery.eventId };
  }

  /** A test or a retry, within the org's budget: the job and its audit row commit together. */
  private async queue(
    principal: Principal,
    orgId: string,
    action: 'webhook.tested' | 'webhook.delivery_retried',
    details: Record<string, string>,
    job: DeliverJob,
  ): Promise<void> {
    if (!this.dispatcher.available) throw new ServiceUnavailableException(ERRORS.queueDown);
    await this.throttle.take(orgId);
    await this.transactions.run(async (manager) => {
      await this.audit.record(manager, {
        orgId,
        action,
        ...actorOf(principal),
        target: { type: 'webhook', id: job.endpointId },
        details,
      });
      await this.dispatcher.enqueue(orgId, job, this.repo.executorIn(manager));
    });
  }

  private async endpoint(principal: Principal, orgId: string, id: string): Promise<WebhookEndpointEntity> {
    await this.requireManager(principal, orgId);
    const endpoint = await this.repo.findEndpoint(orgId, id);
    if (!endpoint) throw new NotFoundException(ERRORS.webhookNotFound);
    return endpoint;
  }

  /** Non-member (or no such org): 404, as everywhere; member or viewer: 403. */
  private async requireManager(principal: Principal, orgId: string): Promise<void> {
    await requireOrgAdmin(this.directory, principal, orgId);
    if (!this.settings.apiKeySecret) throw new NotImplementedException(ERRORS.webhooksNotConfigured);
  }

  private requireAllowedUrl(url: string): void {
    if (this.events.httpsOnly && !url.startsWith('https://')) throw new BadRequestException(ERRORS.httpsOnly);
  }

  private box(): SecretBox {
    return new SecretBox(this.settings.apiKeySecret!);
  }
}
