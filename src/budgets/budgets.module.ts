import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { CoherenceModule } from '../coherence/coherence.module.js';
import { PeriodicJobsModule } from '../common/periodic-jobs.js';
import { CreditLeases } from './credit-leases.js';
import { KeyLimitStore } from './key-limit.store.js';
import { LeaseInvalidation } from './lease-invalidation.js';
import { SpendGuard } from './spend.guard.js';
import { WindowLeases } from './window-leases.js';

/**
 * Budgets: what a request may spend and what it has spent. Every budget's instance lease drawn
 * from PostgreSQL, on one primitive (lease.ts): a key's credits and rate windows (and its plan's
 * windows), provided here, and the orgs' daily meter blocks (OrgMeterLeases, over the
 * MeterBlockStore port), which usage provides beside the table it binds that port to. Also the
 * networks a key may be used from, and SpendGuard, the one executor of what a route spends (those,
 * then the org's meter of `@Charges` through the OrgMeter port that usage implements), which the
 * root module binds to auth's RequestBudget port so the auth decorators apply it. A key's change
 * drops its leases on every instance before the change is acknowledged (LeaseInvalidation).
 * Registers no global provider.
 */
@Module({
  // AuthModule: the verification outcome recorder its refusals are counted in. CoherenceModule:
  // the change notifications that drop a changed key's leases.
  imports: [PeriodicJobsModule, AuthModule, CoherenceModule],
  providers: [KeyLimitStore, WindowLeases, CreditLeases, SpendGuard, LeaseInvalidation],
  exports: [SpendGuard, WindowLeases, CreditLeases],
})
export class BudgetsModule {}
