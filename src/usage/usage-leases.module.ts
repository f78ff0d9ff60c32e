import { Module } from '@nestjs/common';
import { MeterBlockStore } from '../budgets/meter-block-store.js';
import { OrgMeterLeases } from '../budgets/org-meter-leases.js';
import { PeriodicJobsModule } from '../common/periodic-jobs.js';
import { LeasedCharges } from './leased-charges.js';
import { MeterCounts } from './meter-counts.js';
import { MeterLeaseRepository } from './meter-lease.repository.js';
import { PendingRefunds } from './pending-refunds.js';
import { UsageThresholds } from './usage-thresholds.js';
import { UsageRepository } from './usage.repository.js';

/**
 * Charging's state: this instance's blocks (budgets' OrgMeterLeases, over usage_leases through the
 * MeterBlockStore port bound here) and pending counts, and the refunds not landed yet
 * (PendingRefunds; the UsageRepository it writes through is here too, shared by every copy). A module of
 * its own, imported by UsageModule, so that an app that builds UsageModule twice (its routes' copy
 * and the one `forFeature` imports) still holds one set of blocks, one counter and one refund queue
 * per process.
 */
@Module({
  imports: [PeriodicJobsModule],
  providers: [
    MeterLeaseRepository,
    // Budgets' port to the blocks' table, which usage owns: budgets' OrgMeterLeases holds the blocks.
    { provide: MeterBlockStore, useExisting: MeterLeaseRepository },
    OrgMeterLeases,
    MeterCounts,
    UsageThresholds,
    LeasedCharges,
    UsageRepository,
    PendingRefunds,
  ],
  exports: [LeasedCharges, UsageThresholds, UsageRepository, PendingRefunds],
})
export class UsageLeasesModule {}
