import type { DataSource } from 'typeorm';
import { AuthMetrics } from '../../src/auth/auth-metrics.js';
import { VerificationCache } from '../../src/auth/verification-cache.js';
import {
  CoherenceLease,
  type InvalidationListener,
  type InvalidationTargets,
} from '../../src/coherence/coherence-lease.js';
import { Settings } from '../../src/settings/settings.js';

const SETTINGS = { session: { secret: 's'.repeat(32) } };

/** For unit specs: a verification cache that is off (no database to lease on). */
export function cacheOff(): VerificationCache {
  const settings = new Settings({ ...SETTINGS, verificationCache: { enabled: false } });
  return new VerificationCache(new CoherenceLease(settings, {} as DataSource), settings, new AuthMetrics());
}

/** A lease that always holds, its notifications delivered by hand (`notify`). */
class HeldLease extends CoherenceLease {
  private readonly subscribers: InvalidationListener[] = [];
  private changes = 0;
  override readonly enabled = true;
  override usable(): boolean {
    return true;
  }
  override stamp(): number {
    return this.changes;
  }
  override holds(stamp: number | null): boolean {
    return stamp === this.changes;
  }
  override onInvalidate(listener: InvalidationListener): void {
    this.subscribers.push(listener);
  }
  notify(targets: Parameters<InvalidationListener>[0]): void {
    this.changes++;
    for (const l of this.subscribers) l(targets);
  }
}

/** For unit specs: a verification cache under a lease that always holds; `notify` delivers a change. */
export function heldCache(settings = new Settings(SETTINGS), metrics = new AuthMetrics()) {
  const lease = new HeldLease(settings, {} as DataSource);
  const cache = new VerificationCache(lease, settings, metrics);
  return { cache, notify: (targets: Parameters<InvalidationListener>[0]) => lease.notify(targets) };
}

/**
 * For unit specs of a CoherentCache: a lease the test drives (held or lapsed, `enabled` false for
 * "no lease at all"), its notifications delivered by hand. `lease` is it typed as the real one.
 */
export class DrivenLease {
  enabled = true;
  valid = true;
  private epoch = 0;
  private readonly subscribers: InvalidationListener[] = [];
  usable() {
    return this.valid;
  }
  stamp() {
    return this.valid ? this.epoch : null;
  }
  holds(stamp: number | null) {
    return stamp !== null && stamp === this.epoch && this.valid;
  }
  onInvalidate(listener: InvalidationListener) {
    this.subscribers.push(listener);
  }
  /** A change notification (the fields not given name nothing), or null: drop everything. */
  notify(t: Partial<InvalidationTargets> | null) {
    this.epoch++;
    for (const l of this.subscribers) l(t ? { keyId: null, userId: null, orgId: null, ...t } : null);
  }
  get lease(): CoherenceLease {
    return this as unknown as CoherenceLease;
  }
}
