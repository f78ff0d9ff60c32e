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
import { VerificationCache } from './verification-cache.js';
import { CoherenceModule } from '../coherence/coherence.module.js';
import { CoherenceLease } from '../coherence/coherence-lease.js';
import { VerificationInvalidation } from '../coherence/verification-invalidation.js';
import { PeriodicJobsModule } from '../common/periodic-jobs.js';
import { RequestBudgetGuard } from './request-budget.js';

const GUARDS = [CredentialGuard, SessionOnlyGuard, ScopesGuard, RequestBudgetGuard, LastUseGuard];

/**
 * Both credentials, one Principal. Exports the guards so routes anywhere in a host can use
 * `@Authenticated()`, `@SessionOnly()` and `@RequireScopes()`. Registers no global guard.
 */
@Module({
  imports: [PeriodicJobsModule, CoherenceModule],
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
    VerificationCache,
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
  ],
})
export class AuthModule {
  /** AuthMetrics (public) reports the verification cache: its lease and its writers' waits included. */
  constructor(metrics: AuthMetrics, lease: CoherenceLease, invalidation: VerificationInvalidation) {
    metrics.leaseValid = () => lease.usable();
    invalidation.onAcknowledged((seconds) => metrics.invalidationAcknowledged(seconds));
  }
}
