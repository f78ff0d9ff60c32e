import { Module } from '@nestjs/common';
import { CoherenceLease } from './coherence-lease.js';
import { VerificationInvalidation } from './verification-invalidation.js';

/**
 * The coherence protocol between PostgreSQL and every instance's in-process caches: the
 * instance's lease (a LISTEN connection and its row in `cache_leases`), the change notifications
 * the triggers send and their acknowledgements, and for writers the wait until every leased
 * instance has applied a change (VerificationInvalidation, afterCommit in change-tail.ts). A
 * cache built on it is a CoherentCache (coherent-cache.ts): auth's VerificationCache and
 * versioning's OrgVersionCache. Needs Settings and the DataSource from the importing application.
 */
@Module({
  providers: [CoherenceLease, VerificationInvalidation],
  exports: [CoherenceLease, VerificationInvalidation],
})
export class CoherenceModule {}
