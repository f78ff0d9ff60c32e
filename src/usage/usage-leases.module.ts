import { Module } from '@nestjs/common';
import { PeriodicJobsModule } from '../common/periodic-jobs.js';
import { LeasedCharges } from './leased-charges.js';
import { MeterCounts } from './meter-counts.js';
import { MeterLeaseRepository } from './meter-lease.repository.js';
import { OrgMeterLeases } from './meter-leases.js';
import { RefundsInFlight } from './refunds-in-flight.js';
import { UsageThresholds } from './usage-thresholds.js';

/**
 * Charging's state: this instance's blocks and pending counts, and the refunds being written. A module of its own, imported
 * by UsageModule, so that an app that builds UsageModule twice (its routes' copy and the one
 * `forFeature` imports) still holds one set of blocks and one counter per process.
 */
@Module({
  imports: [PeriodicJobsModule],
  providers: [MeterLeaseRepository, OrgMeterLeases, MeterCounts, UsageThresholds, LeasedCharges, RefundsInFlight],
  exports: [LeasedCharges, UsageThresholds, RefundsInFlight],
})
export class UsageLeasesModule {}
