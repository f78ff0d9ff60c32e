import { Injectable } from '@nestjs/common';
import { CoherenceLease } from '../coherence/coherence-lease.js';
import { CoherentCache } from '../coherence/coherent-cache.js';
import { OrgVersionRepository } from './org-version.repository.js';

/** Without the lease (VERIFICATION_CACHE=false), a pin is re-read this often. */
const UNLEASED_TTL_MS = 5_000;
const MAX_ORGS = 10_000;
/** An org with no row here (a host's own directory, or no such org): kept briefly, so it is not read per request. */
const NONE = '';
const NONE_TTL_MS = 5_000;

/**
 * org id → pinned API version, in memory: a coherent cache (src/coherence/). Under the lease an
 * entry lives until a change to the org's row is announced (the orgs table's change
 * notifications), so a request reads the pin from memory and `org set-version` is applied by
 * every instance before the command returns. Without a lease, entries live a few seconds.
 */
@Injectable()
export class OrgVersionCache {
  private readonly pins: CoherentCache<string, string>;

  constructor(
    lease: CoherenceLease,
    private readonly repository: OrgVersionRepository,
  ) {
    this.pins = new CoherentCache(lease, {
      max: MAX_ORGS,
      unleasedTtlMs: UNLEASED_TTL_MS,
      invalidatedBy: (t) => (t.orgId ? (orgId) => orgId === t.orgId : null),
    });
  }

  /** The pin when it is in memory (the hot path: no promise, no allocation); null: known to have none. */
  cached(orgId: string): string | null | undefined {
    const pin = this.pins.get(orgId);
    return pin === NONE ? null : pin;
  }

  /** Reads the pin (null: no such org) and keeps it when no change raced the read. */
  async load(orgId: string): Promise<string | null> {
    const pin = await this.pins.load(
      orgId,
      async () => (await this.repository.pinOf(orgId)) ?? NONE,
      (p) => (p === NONE ? NONE_TTL_MS : undefined),
    );
    return pin === NONE ? null : pin;
  }
}
