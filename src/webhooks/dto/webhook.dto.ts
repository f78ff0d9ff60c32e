import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import {
  IsArray,
  IsBoolean,
  IsInt,
  IsString,
  Max,
  Min,
  registerDecorator,
  type ValidationOptions,
} from 'class-validator';
import { PageQuery } from '../../common/pagination.js';
import { EachIn, IsStorableText, MaxStringLength, present } from '../../common/validation.js';
import { EVENT_TYPES } from '../../events/event-types.js';

/** An absolute http(s) URL without credentials, at most 2048 characters (https only in production: the service checks that). */
function IsWebhookUrl(options?: ValidationOptions) {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'isWebhookUrl',
      target: object.constructor,
      propertyName,
      options: {
        message: `${propertyName} must be an absolute http or https URL without user name or password`,
        ...options,
      },
      validator: {
        validate: (v: unknown) => {
          if (typeof v !== 'string' || v.length > 2048) return typeof v !== 'string';
          try {
            const u = new URL(v);
            return (
              (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password && u.hostname.length > 0
            );
          } catch {
            return false;
          }
        },
      },
    });
}

/** 1..max elements; a non-array passes (that is `@IsArray`'s message to give). */
function ArrayCount(min: number, max: number, message: string) {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'arrayCount',
      target: object.constructor,
      propertyName,
      options: { message },
      validator: { validate: (v: unknown) => !Array.isArray(v) || (v.length >= min && v.length <= max) },
    });
}

/** Optional, but a JSON null is a wrong type, not an omission (null cannot be stored). */

const EVENT_TYPES_DOC = `Event types to receive: ${EVENT_TYPES.join(', ')}.`;

@ApiSchema({ name: 'CreateWebhookRequest' })
export class CreateWebhookDto {
  @ApiProperty({ maxLength: 2048, description: 'Where events are POSTed. https only in production.' })
  @IsString({ message: 'url must be a string' })
  @IsWebhookUrl()
  url: string;

  @ApiProperty({
    type: [String],
    enum: EVENT_TYPES,
    minItems: 1,
    maxItems: EVENT_TYPES.length,
    description: EVENT_TYPES_DOC,
  })
  @IsArray({ message: 'event_types must be an array of event types' })
  @ArrayCount(1, EVENT_TYPES.length, `event_types must name 1 to ${EVENT_TYPES.length} event types`)
  @EachIn(EVENT_TYPES, { message: `event_types may only contain ${EVENT_TYPES.join(', ')}` })
  event_types: string[];

  @ApiPropertyOptional({ maxLength: 200, description: 'A label for people; default "".' })
  @present('description')
  @IsString({ message: 'description must be a string' })
  @MaxStringLength(200)
  @IsStorableText()
  description?: string;
}

@ApiSchema({ name: 'UpdateWebhookRequest' })
export class UpdateWebhookDto {
  @ApiPropertyOptional({ maxLength: 2048 })
  @present('url')
  @IsString({ message: 'url must be a string' })
  @IsWebhookUrl()
  url?: string;

  @ApiPropertyOptional({ type: [String], enum: EVENT_TYPES, description: EVENT_TYPES_DOC })
  @present('event_types')
  @IsArray({ message: 'event_types must be an array of event types' })
  @ArrayCount(1, EVENT_TYPES.length, `event_types must name 1 to ${EVENT_TYPES.length} event types`)
  @EachIn(EVENT_TYPES, { message: `event_types may only contain ${EVENT_TYPES.join(', ')}` })
  event_types?: string[];

  @ApiPropertyOptional({ description: 'false stops deliveries; true resumes them and clears the failing mark.' })
  @present('enabled')
  @IsBoolean({ message: 'enabled must be a boolean' })
  enabled?: boolean;

  @ApiPropertyOptional({ maxLength: 200 })
  @present('description')
  @IsString({ message: 'description must be a string' })
  @MaxStringLength(200)
  @IsStorableText()
  description?: string;
}

export const MAX_SECRET_OVERLAP_SECONDS = 604_800;
export const DEFAULT_SECRET_OVERLAP_SECONDS = 86_400;
const OVERLAP_RULE = `overlap_seconds must be an integer from 0 to ${MAX_SECRET_OVERLAP_SECONDS}`;

/** POST /orgs/{org_id}/webhooks/{id}/rotate-secret. */
@ApiSchema({
  name: 'RotateWebhookSecretRequest',
  description: 'Unknown fields are refused (400). An empty body takes the default overlap.',
})
export class RotateWebhookSecretDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: MAX_SECRET_OVERLAP_SECONDS,
    default: DEFAULT_SECRET_OVERLAP_SECONDS,
    description:
      'How long the replaced secret keeps signing beside the new one (seconds, at most 7 days); 0 stops it at once.',
  })
  @present('overlap_seconds')
  @IsInt({ message: OVERLAP_RULE })
  @Min(0, { message: OVERLAP_RULE })
  @Max(MAX_SECRET_OVERLAP_SECONDS, { message: OVERLAP_RULE })
  overlap_seconds?: number;
}

export class ListWebhooksQuery extends PageQuery {}

@ApiSchema({ name: 'Webhook' })
export class WebhookDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) org_id: string;
  @ApiProperty() url: string;
  @ApiProperty() description: string;
  @ApiProperty({ type: [String], enum: EVENT_TYPES }) event_types: string[];
  @ApiProperty() enabled: boolean;
  @ApiPropertyOptional({
    format: 'date-time',
    description:
      'Present once a delivery exhausted its retries (about a day); cleared by a success or by enabling again.',
  })
  failing_since?: string;
  @ApiPropertyOptional({
    format: 'date-time',
    description: 'Present after a secret rotation with an overlap: until then the replaced secret signs too.',
  })
  previous_secret_expires_at?: string;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

@ApiSchema({ name: 'CreatedWebhook' })
export class CreatedWebhookDto extends WebhookDto {
  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'The Standard Webhooks signing secret. Shown in this response only.',
  })
  secret: string;
}

@ApiSchema({ name: 'RotatedWebhookSecret' })
export class RotatedWebhookSecretDto extends WebhookDto {
  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'The new signing secret. Shown in this response only.',
  })
  secret: string;
}

@ApiSchema({ name: 'WebhookList' })
export class WebhookListDto {
  @ApiProperty({ type: [WebhookDto] }) webhooks: WebhookDto[];
  @ApiPropertyOptional({ description: 'Present when more rows exist: pass it as ?cursor=.' }) next_cursor?: string;
}

@ApiSchema({ name: 'WebhookDelivery' })
export class WebhookDeliveryDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid', description: 'The event id, also the `webhook-id` header.' }) event_id: string;
  @ApiProperty() event_type: string;
  @ApiProperty({ type: 'integer', description: '1 for the first attempt of a job, 2 for its first retry...' })
  attempt: number;
  @ApiProperty({ enum: ['succeeded', 'failed'] }) status: string;
  @ApiPropertyOptional({ type: 'integer', description: "The receiver's HTTP status; absent when no answer came." })
  response_status?: number;
  @ApiProperty({ type: 'integer' }) latency_ms: number;
  @ApiPropertyOptional({ description: 'At most 1 KB of the response body.' }) response_body?: string;
  @ApiPropertyOptional({ description: 'Why the attempt failed (refused address, timeout, status...).' }) error?: string;
  @ApiProperty({ format: 'date-time' }) created_at: string;
}

@ApiSchema({ name: 'WebhookDeliveryList' })
export class WebhookDeliveryListDto {
  @ApiProperty({ type: [WebhookDeliveryDto] }) deliveries: WebhookDeliveryDto[];
  @ApiPropertyOptional() next_cursor?: string;
}

@ApiSchema({ name: 'WebhookQueued' })
export class QueuedDto {
  @ApiProperty({ format: 'uuid', description: 'The event id (`webhook-id`) of what was queued.' }) event_id: string;
}
