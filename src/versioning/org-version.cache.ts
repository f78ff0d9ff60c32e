import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { VerificationLease } from '../auth/verification-cache/verification-lease.js';
import { OrgVersionRepository } from './org-version.repository.js';

/** Without the verification cache's lease (VERIFICATION_CACHE=false), a pin is re-read this often. */
const UNLEASED_TTL_MS = 5_000;
const MAX_ORGS = 10_000;
/** An org with no row here (a host's own directory, or no such org): kept briefly, so it is not read per request. */
const NONE = '';
const NONE_TTL_MS = 5_000;

/**
 * org id → pinned API version, in memory. Under the verification cache's lease an entry lives
 * until a change to the org's row is announced (the orgs table's change notifications), so a
 * request reads the pin from memory and `org set-version` is applied by every instance before
 * the command returns. Without a lease, entries live a few seconds.
 */
@Injectable()
export class OrgVersionCache {
  private readonly pins = new LRUCache<string, string>({ max: MAX_ORGS });

  constructor(
    private readonly lease: VerificationLease,
    private readonly repository: OrgVersionRepository,
  ) {
    lease.onInvalidate((t) => {
      if (!t) this.pins.clear();
      else if (t.orgId) this.pins.delete(t.orgId);
    });
  }

  /** The pin when it is in memory (the hot path: no promise, no allocation); null: known to have none. */
  cached(orgId: string): string | null | undefined {
    const pin = this.pins.get(orgId);
    return pin === NONE ? null : pin;
  }

  /** Reads the pin (null: no such org) and keeps it when no change raced the read. */
  async load(orgId: string): Promise<string | null> {
    const leased = this.lease.enabled;
    const stamp = leased ? this.lease.stamp() : null;
    const pin = await this.repository.pinOf(orgId);
    if (pin === null) this.pins.set(orgId, NONE, { ttl: NONE_TTL_MS });
    else if (!leased) this.pins.set(orgId, pin, { ttl: UNLEASED_TTL_MS });
    else if (this.lease.holds(stamp)) this.pins.set(orgId, pin);
    return pin;
  }
}
