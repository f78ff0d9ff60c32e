import { ApiKeyCountEntity } from '../api-keys/api-key-count.entity.js';
import { ApiKeyEntity } from '../api-keys/api-key.entity.js';
import { AuditEventEntity } from '../audit/audit-event.entity.js';
import { MembershipEntity } from '../directory/membership.entity.js';
import { OrgEntity } from '../directory/org.entity.js';
import { UserEntity } from '../directory/user.entity.js';
import { WorkspaceEntity } from '../directory/workspace.entity.js';
import { UsageAttributionEntity } from '../usage/usage-attribution.entity.js';
import { UsageCounterEntity } from '../usage/usage-counter.entity.js';
import { UsageMeterAttributionEntity, UsageMeterCounterEntity } from '../usage/usage-meter.entities.js';
import { OrgKeyPolicyEntity } from '../key-policies/key-policy.entity.js';
import { ApiKeyStaleWarningEntity } from '../api-keys/api-key-stale-warning.entity.js';
import { EventMarkEntity, EventOutboxEntity } from '../events/event-outbox.entity.js';
import { WebhookDeliveryEntity, WebhookEndpointEntity } from '../webhooks/webhook.entities.js';

/** Everything a host adds to its own DataSource: `entities: [...ENTITIES]`, `migrations: [...MIGRATIONS]`. */
export const ENTITIES = [
  OrgEntity,
  UserEntity,
  MembershipEntity,
  WorkspaceEntity,
  ApiKeyEntity,
  UsageCounterEntity,
  AuditEventEntity,
  UsageAttributionEntity,
  EventOutboxEntity,
  EventMarkEntity,
  WebhookEndpointEntity,
  WebhookDeliveryEntity,
  ApiKeyCountEntity,
  OrgKeyPolicyEntity,
  ApiKeyStaleWarningEntity,
  UsageMeterCounterEntity,
  UsageMeterAttributionEntity,
];
export { MIGRATIONS } from '../database/migrations/index.js';
