import { Body, Controller, Delete, Get, HttpCode, Patch, Post, UseInterceptors } from '@nestjs/common';
import { RequestOriginInterceptor } from '../audit/request-origin.interceptor.js';
import {
  ApiAcceptedResponse,
  ApiBody,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { CurrentPrincipal, SessionOnly } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { ApiErrors, AUTH_ERRORS } from '../common/openapi.js';
import { QueryOf, StrictBodyPipe, UuidParam } from '../common/validation.js';
import {
  CreatedWebhookDto,
  CreateWebhookDto,
  ListWebhooksQuery,
  QueuedDto,
  RotatedWebhookSecretDto,
  RotateWebhookSecretDto,
  UpdateWebhookDto,
  WebhookDeliveryListDto,
  WebhookDto,
  WebhookListDto,
} from './dto/webhook.dto.js';
import { RetryAfterInterceptor } from './webhook-send-throttle.js';
import { WebhooksService } from './webhooks.service.js';
import type { DeliveryRecord, WebhookRecord } from './webhook-records.js';

const FORBIDDEN =
  'Called with an API key (webhooks need a browser session), or the caller is a member or viewer of the org (owners and admins only).';
const ORG_404 = 'The org does not exist or the caller is not in it; both look identical.';
const HOOK_404 = "No such webhook in this org, or the org is not the caller's; all look identical.";
const NOT_CONFIGURED = 'API_KEY_SECRET unset: signing secrets cannot be sealed.';
const THROTTLED = `${AUTH_ERRORS[429]} Or: too many test and retry requests for this org this minute (WEBHOOK_SEND_RATE_LIMIT); see Retry-After.`;

@ApiTags('webhooks')
@UseInterceptors(RequestOriginInterceptor)
@Controller('orgs/:org_id/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post()
  @SessionOnly()
  @ApiOperation({
    operationId: 'createWebhook',
    summary: 'Add a webhook endpoint',
    description:
      'Owners and admins. The signing secret (`whsec_...`, Standard Webhooks) is in this response only; it is stored sealed, never in clear.',
  })
  @ApiBody({ type: CreateWebhookDto })
  @ApiCreatedResponse({ type: CreatedWebhookDto })
  @ApiErrors({
    400: 'A bad field (named), e.g. url not an https URL in production, an unknown event type, an unknown field; org_id not a UUID.',
    ...AUTH_ERRORS,
    403: FORBIDDEN,
    404: ORG_404,
    409: 'The org already has the most endpoints it may have (WEBHOOK_MAX_ENDPOINTS_PER_ORG, default 10).',
    501: NOT_CONFIGURED,
  })
  create(
    @CurrentPrincipal() p: Principal,
    @UuidParam('org_id') orgId: string,
    @Body(new StrictBodyPipe(CreateWebhookDto)) dto: Readonly<CreateWebhookDto>,
  ): Promise<WebhookRecord & { secret: string }> {
    return this.webhooks.create(p, orgId, dto);
  }

  @Get()
  @SessionOnly()
  @ApiOperation({
    operationId: 'listWebhooks',
    summary: "List the org's webhook endpoints",
    description: 'Owners and admins; newest first, paginated.',
  })
  @ApiOkResponse({ type: WebhookListDto })
  @ApiErrors({
    400: 'org_id not a UUID, limit outside 1..100, or a cursor this service did not return.',
    ...AUTH_ERRORS,
    403: FORBIDDEN,
    404: ORG_404,
    501: NOT_CONFIGURED,
  })
  list(
    @CurrentPrincipal() p: Principal,
    @UuidParam('org_id') orgId: string,
    @QueryOf(ListWebhooksQuery) query: Readonly<ListWebhooksQuery>,
  ): Promise<{ webhooks: WebhookRecord[] }> {
    return this.webhooks.list(p, orgId, query);
  }

  @Get(':id')
  @SessionOnly()
  @ApiOperation({ operationId: 'getWebhook', summary: 'One webhook endpoint' })
  @ApiOkResponse({ type: WebhookDto })
  @ApiErrors({ 400: 'org_id or id not a UUID.', ...AUTH_ERRORS, 403: FORBIDDEN, 404: HOOK_404, 501: NOT_CONFIGURED })
  get(
    @CurrentPrincipal() p: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('id') id: string,
  ): Promise<WebhookRecord> {
    return this.webhooks.get(p, orgId, id);
  }

  @Patch(':id')
  @SessionOnly()
  @ApiOperation({
    operationId: 'updateWebhook',
    summary: 'Change url, event types, description or enabled',
    description: 'Enabling again (or a new url) clears the failing mark.',
  })
  @ApiBody({ type: UpdateWebhookDto })
  @ApiOkResponse({ type: WebhookDto })
  @ApiErrors({
    400: 'A bad field (named) or an unknown one.',
    ...AUTH_ERRORS,
    403: FORBIDDEN,
    404: HOOK_404,
    501: NOT_CONFIGURED,
  })
  update(
    @CurrentPrincipal() p: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('id') id: string,
    @Body(new StrictBodyPipe(UpdateWebhookDto)) dto: Readonly<UpdateWebhookDto>,
  ): Promise<WebhookRecord> {
    return this.webhooks.update(p, orgId, id, dto);
  }

  @Delete(':id')
  @SessionOnly()
  @HttpCode(204)
  @ApiOperation({ operationId: 'deleteWebhook', summary: 'Remove a webhook endpoint and its delivery log' })
  @ApiNoContentResponse({ description: 'Removed; queued deliveries to it are dropped.' })
  @ApiErrors({ 400: 'org_id or id not a UUID.', ...AUTH_ERRORS, 403: FORBIDDEN, 404: HOOK_404, 501: NOT_CONFIGURED })
  remove(
    @CurrentPrincipal() p: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('id') id: string,
  ): Promise<void> {
    return this.webhooks.remove(p, orgId, id);
  }

  @Post(':id/rotate-secret')
  @SessionOnly()
  @HttpCode(200)
  @ApiOperation({
    operationId: 'rotateWebhookSecret',
    summary: "Replace the endpoint's signing secret",
    description:
      'Owners and admins. The new secret is in this response only. For `overlap_seconds` (default 86400, at most 604800) the replaced secret keeps signing: each message carries both signatures in `webhook-signature`, space-separated, so a receiver verifies with either while it switches. Rotating again during an overlap drops the older secret at once.',
  })
  @ApiBody({ type: RotateWebhookSecretDto, required: false })
  @ApiOkResponse({ type: RotatedWebhookSecretDto })
  @ApiErrors({
    400: 'overlap_seconds not an integer from 0 to 604800, an unknown field; org_id or id not a UUID.',
    ...AUTH_ERRORS,
    403: FORBIDDEN,
    404: HOOK_404,
    501: NOT_CONFIGURED,
  })
  rotateSecret(
    @CurrentPrincipal() p: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('id') id: string,
    @Body(new StrictBodyPipe(RotateWebhookSecretDto)) dto: Readonly<RotateWebhookSecretDto>,
  ): Promise<WebhookRecord & { secret: string }> {
    return this.webhooks.rotateSecret(p, orgId, id, dto);
  }

  @Post(':id/test')
  @SessionOnly()
  @UseInterceptors(RetryAfterInterceptor)
  @HttpCode(202)
  @ApiOperation({
    operationId: 'testWebhook',
    summary: 'Send a `webhook.test` event',
    description: 'Queued like any event (signed, retried); delivered even while the endpoint is disabled.',
  })
  @ApiAcceptedResponse({ type: QueuedDto })
  @ApiErrors({
    400: 'org_id or id not a UUID.',
    ...AUTH_ERRORS,
    403: FORBIDDEN,
    404: HOOK_404,
    429: THROTTLED,
    501: NOT_CONFIGURED,
    503: 'The database or the job queue is unavailable; retry shortly.',
  })
  test(
    @CurrentPrincipal() p: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('id') id: string,
  ): Promise<{ event_id: string }> {
    return this.webhooks.sendTest(p, orgId, id);
  }

  @Get(':id/deliveries')
  @SessionOnly()
  @ApiOperation({
    operationId: 'listWebhookDeliveries',
    summary: 'Delivery attempts, newest first',
    description: 'Status, latency, response code and at most 1 KB of the response body per attempt; paginated.',
  })
  @ApiOkResponse({ type: WebhookDeliveryListDto })
  @ApiErrors({
    400: 'org_id or id not a UUID, limit outside 1..100, or a bad cursor.',
    ...AUTH_ERRORS,
    403: FORBIDDEN,
    404: HOOK_404,
    501: NOT_CONFIGURED,
  })
  deliveries(
    @CurrentPrincipal() p: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('id') id: string,
    @QueryOf(ListWebhooksQuery) query: Readonly<ListWebhooksQuery>,
  ): Promise<{ deliveries: DeliveryRecord[] }> {
    return this.webhooks.deliveries(p, orgId, id, query);
  }

  @Post(':id/deliveries/:delivery_id/retry')
  @SessionOnly()
  @UseInterceptors(RetryAfterInterceptor)
  @HttpCode(202)
  @ApiOperation({
    operationId: 'retryWebhookDelivery',
    summary: 'Deliver the event of an attempt again',
    description: 'A new job with the same event id and payload.',
  })
  @ApiAcceptedResponse({ type: QueuedDto })
  @ApiErrors({
    400: 'A path parameter is not a UUID.',
    ...AUTH_ERRORS,
    403: FORBIDDEN,
    404: `${HOOK_404} Or: no such delivery, or its event is no longer kept.`,
    429: THROTTLED,
    501: NOT_CONFIGURED,
    503: 'The database or the job queue is unavailable; retry shortly.',
  })
  retry(
    @CurrentPrincipal() p: Principal,
    @UuidParam('org_id') orgId: string,
    @UuidParam('id') id: string,
    @UuidParam('delivery_id') deliveryId: string,
  ): Promise<{ event_id: string }> {
    return this.webhooks.retry(p, orgId, id, deliveryId);
  }
}
