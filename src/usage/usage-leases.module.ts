import { Module } from '@nestjs/common';
import { MeterBlockStore } from '../budgets/meter-block-store.js';
import { OrgMeterLeases } from '../budgets/org-meter-leases.js';
import { PeriodicJobsModule } from '../common/periodic-jobs.js';
import { LeasedCharges } from './leased-charges.js';
import { MeterCounts } from './meter-counts.js';
import { MeterLeaseRepository } from './meter-lease.repository.js';
import { RefundsInFlight } from './refunds-in-flight.js';
import { UsageThresholds } from './usage-thresholds.js';

/**
 * Charging's state: this instance's blocks (budgets' OrgMeterLeases, over usage_leases through the
 * MeterBlockStore port bound here) and pending counts, and the refunds being written. A module of
 * its own, imported by UsageModule, so that an app that builds UsageModule twice (its routes' copy
 * and the one `forFeature` imports) still holds one set of blocks and one counter per process.
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
    RefundsInFlight,
  ],
  exports: [LeasedCharges, UsageThresholds, RefundsInFlight],
})
export class UsageLeasesModule {}
