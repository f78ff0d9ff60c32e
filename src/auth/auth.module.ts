import { Module } from '@nestjs/common';
import { ScopesGuard, SessionOnlyGuard } from './access.guards.js';
import { ApiKeyVerifier } from './api-key-verifier.js';
import { ApiKeyStrategy } from './api-key.strategy.js';
import { AuthFailureThrottle } from './auth-failure-throttle.js';
import { AuthMetrics } from './auth-metrics.js';
import { CredentialGuard } from './credential.guard.js';
import { LastUsedWriter } from './last-used-writer.js';
import { LastUseGuard } from './last-use.guard.js';
import { ScopeUsageRecorder } from './scope-usage-recorder.js';
import { VerificationOutcomeRecorder } from './verification-outcome-recorder.js';
import { SessionOrgResolver } from './session-org.resolver.js';
import { SessionStrategy } from './session.strategy.js';
import { VerificationCache } from './verification-cache/verification-cache.js';
import { VerificationInvalidation } from './verification-cache/verification-invalidation.js';
import { VerificationLease } from './verification-cache/verification-lease.js';
import { PeriodicJobsModule } from '../common/periodic-jobs.js';
import { RequestBudgetGuard } from './request-budget.js';

const GUARDS = [CredentialGuard, SessionOnlyGuard, ScopesGuard, RequestBudgetGuard, LastUseGuard];

/**
 * Both credentials, one Principal. Exports the guards so routes anywhere in a host can use
 * `@Authenticated()`, `@SessionOnly()` and `@RequireScopes()`. Registers no global guard.
 */
@Module({
  imports: [PeriodicJobsModule],
  providers: [
    ApiKeyStrategy,
    SessionStrategy,
    ApiKeyVerifier,
    LastUsedWriter,
    ScopeUsageRecorder,
    VerificationOutcomeRecorder,
    AuthFailureThrottle,
    AuthMetrics,
    SessionOrgResolver,
    VerificationLease,
    VerificationCache,
    VerificationInvalidation,
    ...GUARDS,
  ],
  exports: [
    ...GUARDS,
    ApiKeyStrategy,
    SessionStrategy,
    AuthFailureThrottle,
    AuthMetrics,
    SessionOrgResolver,
    ApiKeyVerifier,
    LastUsedWriter,
    ScopeUsageRecorder,
    VerificationOutcomeRecorder,
    VerificationInvalidation,
    VerificationLease,
  ],
})
export class AuthModule {}
