/**
 * The public entry of the `keys-usage-identity` package: what a host Nest application imports.
 * Everything else under dist/ is internal and may change without notice.
 */

// The module and its options.
export { KeysUsageIdentityModule } from './core/keys-usage-identity.module.js';
export {
  KEYS_USAGE_IDENTITY_OPTIONS,
  type KeysUsageIdentityAsyncOptions,
  type KeysUsageIdentityExtras,
  type KeysUsageIdentityModuleOptions,
} from './core/keys-usage-identity.module-definition.js';
export type {
  KeysUsageIdentityOptions,
  SessionVerificationOptions,
  VerificationCacheOptions,
} from './settings/keys-usage-identity.options.js';

// Protecting and charging the host's own routes.
export { Authenticated, CurrentPrincipal, RequireScopes, SessionOnly } from './auth/auth.decorators.js';
export { RateLimited, type RateLimitSpec } from './budgets/rate-limited.decorator.js';
export { SpendGuard } from './budgets/spend.guard.js';
export { BudgetsModule } from './budgets/budgets.module.js';
export { refuseBeforeHandler } from './common/refusal.js';
export { TooManyRequests, type TooManyRequestsOptions } from './common/too-many-requests.js';
export {
  DEFAULT_PLAN_RATE_LIMITS,
  parsePlanRateLimits,
  type PlanRateLimits,
  type RateWindow,
} from './common/plan-rate-limits.js';
export { ScopesGuard, SessionOnlyGuard } from './auth/access.guards.js';
export { CredentialGuard } from './auth/credential.guard.js';
export { LastUseGuard } from './auth/last-use.guard.js';
export type { Principal } from './auth/principal.js';
export { AuthMetrics, type VerificationOutcome } from './auth/auth-metrics.js';
// A change made outside this module's services (rotation, a host's own SQL on our tables) is
// notified by the database; awaitAcknowledged() after its commit waits until every cache applied it.
export { VerificationInvalidation } from './coherence/verification-invalidation.js';
export { Charges } from './usage/charges.decorator.js';

// Metering from code.
export { UsageService, type ChargeResult, type MeterReport, type UsageReport } from './usage/usage.service.js';
export {
  isMeter,
  METERS,
  UnknownOrgError,
  UsageLimitExceededError,
  type Counters,
  type Meter,
} from './common/meters.js';
// The meters a deployment defines beside the contract's four (the module option `meters`).
export {
  CONTRACT_METERS,
  MeterRegistry,
  type MeterDefinition,
  type MeterRegistryInput,
} from './common/meter-registry.js';
// Usage history: attribution per credential, daily reports, retention.
export { SYSTEM_ATTRIBUTION, type Attribution, type CredentialKind } from './common/meters.js';
export { UsageHistoryService, type DailyUsageReport, type KeyDailyUsageReport } from './usage/usage-history.service.js';
export { type DailyUsage } from './usage/usage.service.js';
export { UsageRetention } from './usage/usage-retention.js';
export type { UsageCharging, UsageOptions } from './settings/keys-usage-identity.options.js';
export {
  DEFAULT_PLAN_LIMITS,
  parsePlanLimits,
  type Limit,
  type MeterLimits,
  type PlanLimits,
} from './common/plan-limits.js';

// Keys from code (the same service behind POST/GET/DELETE /api-keys).
export { ApiKeysService } from './api-keys/api-keys.service.js';
export type { ApiKeyRecord, MintedApiKey, OrgApiKeyRecord } from './api-keys/api-key.record.js';
export { MintApiKeyDto } from './api-keys/dto/mint-api-key.dto.js';
export { RotateApiKeyDto } from './api-keys/dto/rotate-api-key.dto.js';

// Orgs, users and memberships: the port and the default implementation.
export { memberKey, OrgDirectory, type MemberContext, type MintStanding } from './directory/org-directory.js';
export { TypeOrmOrgDirectory } from './directory/typeorm-org-directory.js';

// Persistence the host adds to its own DataSource.
export { ENTITIES, MIGRATIONS } from './core/schema.js';
export { runMigrationsLocked } from './database/migrate.js';
export { ApiKeyEntity } from './api-keys/api-key.entity.js';
export { UsageCounterEntity } from './usage/usage-counter.entity.js';
export { UsageAttributionEntity } from './usage/usage-attribution.entity.js';
export { UsageMeterAttributionEntity, UsageMeterCounterEntity } from './usage/usage-meter.entities.js';
export { MembershipEntity } from './directory/membership.entity.js';
export { OrgEntity } from './directory/org.entity.js';
export { UserEntity } from './directory/user.entity.js';
export { WorkspaceEntity } from './directory/workspace.entity.js';

// Time, roles, scopes and plans.
export { Clock, SystemClock } from './common/clock.js';
export { PLANS, ROLES, type Plan, type Role, type Scope } from './common/roles.js';
export {
  CONTRACT_SCOPES,
  DEFAULT_SCOPE,
  ScopeRegistry,
  type ScopeDefinition,
  type ScopeRegistryInput,
} from './common/scope-registry.js';

// Audit log: record changes in their own transaction, read and export an org's log.
export { AuditModule } from './audit/audit.module.js';
export {
  actorOf,
  AuditService,
  OPERATOR,
  type AuditActor,
  type AuditCredential,
  type AuditEntry,
  type AuditEventRecord,
} from './audit/audit.service.js';
export { AUDIT_ACTIONS, isAuditAction, type AuditAction } from './audit/audit-actions.js';
export { AuditEventEntity } from './audit/audit-event.entity.js';
export { RequestOriginInterceptor } from './audit/request-origin.interceptor.js';
export { Transactions } from './database/transactions.js';

// The caller's orgs and an org's members.
export { OrgsModule } from './orgs/orgs.module.js';
export { OrgsService, type MemberRecord, type OrgRecord } from './orgs/orgs.service.js';
export {
  DirectoryListingUnsupportedError,
  type DirectoryPage,
  type OrgMemberSummary,
  type UserOrgSummary,
} from './directory/org-directory.js';
// Living in a host: its global guard, its Swagger document, its feature modules.
export { KeysUsageIdentityFeatureModule } from './core/keys-usage-identity-feature.module.js';
export { isKeysUsageIdentityRoute, routeAuth, type RouteAuth } from './auth/route-auth.js';
export { addKeysUsageIdentitySecurity } from './common/openapi-security.js';
export { applyMeterRegistry, applyScopeRegistry } from './common/openapi.js';
export { API_KEY_SCHEME, SESSION_SCHEME } from './common/openapi.js';

// Events out: the outbox relay, webhook deliveries and routes. Needs the optional peer
// dependencies pg-boss and standardwebhooks, loaded only when EventsModule starts.
export { EventsModule, type EventsModuleOptions } from './webhooks/events.module.js';
export type { EventsSettings } from './webhooks/events-settings.js';
