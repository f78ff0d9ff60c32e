import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsArray, IsBoolean, IsOptional, IsString, registerDecorator, type ValidationOptions } from 'class-validator';
import { PageQuery } from '../../common/pagination.js';
import { EachIn, IsStorableText, MaxStringLength } from '../../common/validation.js';
import { EVENT_TYPES } from '../../events/event-types.js';

/** An absolute http(s) URL without credentials, at most 2048 characters (https only in production: the service checks that). */
function IsWebhookUrl(options?: ValidationOptions) {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'isWebhookUrl',
      target: object.constructor,
      propertyName,
      options: { message: `${propertyName} must be an absolute http or https URL without user name or password`, ...options },
      validator: {
        validate: (v: unknown) => {
          if (typeof v !== 'string' || v.length > 2048) return typeof v !== 'string';
          try {
            const u = new URL(v);
            return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password && u.hostname.length > 0;
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

const EVENT_TYPES_DOC = `Event types to receive: ${EVENT_TYPES.join(', ')}.`;

@ApiSchema({ name: 'CreateWebhookRequest' })
export class CreateWebhookDto {
  @ApiProperty({ maxLength: 2048, description: 'Where events are POSTed. https only in production.' })
  @IsString({ message: 'url must be a string' })
  @IsWebhookUrl()
  url: string;

  @ApiProperty({ type: [String], enum: EVENT_TYPES, minItems: 1, maxItems: EVENT_TYPES.length, description: EVENT_TYPES_DOC })
  @IsArray({ message: 'event_types must be an array of event types' })
  @ArrayCount(1, EVENT_TYPES.length, `event_types must name 1 to ${EVENT_TYPES.length} event types`)
  @EachIn(EVENT_TYPES, { message: `event_types may only contain ${EVENT_TYPES.join(', ')}` })
  event_types: string[];

  @ApiPropertyOptional({ maxLength: 200, description: 'A label for people; default "".' })
  @IsOptional()
  @IsString({ message: 'description must be a string' })
  @MaxStringLength(200)
  @IsStorableText()
  description?: string;
}

@ApiSchema({ name: 'UpdateWebhookRequest' })
export class UpdateWebhookDto {
  @ApiPropertyOptional({ maxLength: 2048 })
  @IsOptional()
  @IsString({ message: 'url must be a string' })
  @IsWebhookUrl()
  url?: string;

  @ApiPropertyOptional({ type: [String], enum: EVENT_TYPES, description: EVENT_TYPES_DOC })
  @IsOptional()
  @IsArray({ message: 'event_types must be an array of event types' })
  @ArrayCount(1, EVENT_TYPES.length, `event_types must name 1 to ${EVENT_TYPES.length} event types`)
  @EachIn(EVENT_TYPES, { message: `event_types may only contain ${EVENT_TYPES.join(', ')}` })
  event_types?: string[];

  @ApiPropertyOptional({ description: 'false stops deliveries; true resumes them and clears the failing mark.' })
  @IsOptional()
  @IsBoolean({ message: 'enabled must be a boolean' })
  enabled?: boolean;

  @ApiPropertyOptional({ maxLength: 200 })
  @IsOptional()
  @IsString({ message: 'description must be a string' })
  @MaxStringLength(200)
  @IsStorableText()
  description?: string;
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
  @ApiPropertyOptional({ format: 'date-time', description: 'Present once a delivery exhausted its retries (about a day); cleared by a success or by enabling again.' })
  failing_since?: string;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

@ApiSchema({ name: 'CreatedWebhook' })
export class CreatedWebhookDto extends WebhookDto {
  @ApiProperty({ example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', description: 'The Standard Webhooks signing secret. Shown in this response only.' })
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
  @ApiProperty({ type: 'integer', description: '1 for the first attempt of a job, 2 for its first retry...' }) attempt: number;
  @ApiProperty({ enum: ['succeeded', 'failed'] }) status: string;
  @ApiPropertyOptional({ type: 'integer', description: "The receiver's HTTP status; absent when no answer came." }) response_status?: number;
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
