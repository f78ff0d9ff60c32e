import type { DataSource } from 'typeorm';
import { AuthMetrics } from '../../src/auth/auth-metrics.js';
import { VerificationCache } from '../../src/auth/verification-cache/verification-cache.js';
import { VerificationLease, type InvalidationListener } from '../../src/auth/verification-cache/verification-lease.js';
import { Settings } from '../../src/settings/settings.js';

const SETTINGS = { session: { secret: 's'.repeat(32) } };

/** For unit specs: a verification cache that is off (no database to lease on). */
export function cacheOff(): VerificationCache {
  const settings = new Settings({ ...SETTINGS, verificationCache: { enabled: false } });
  const metrics = new AuthMetrics();
  return new VerificationCache(new VerificationLease(settings, {} as DataSource, metrics), settings, metrics);
}

/** A lease that always holds, its notifications delivered by hand (`notify`). */
class HeldLease extends VerificationLease {
  private listener: InvalidationListener = () => undefined;
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
    this.listener = listener;
  }
  notify(targets: Parameters<InvalidationListener>[0]): void {
    this.changes++;
    this.listener(targets);
  }
}

/** For unit specs: a verification cache under a lease that always holds; `notify` delivers a change. */
export function heldCache(settings = new Settings(SETTINGS), metrics = new AuthMetrics()) {
  const lease = new HeldLease(settings, {} as DataSource, metrics);
  const cache = new VerificationCache(lease, settings, metrics);
  return { cache, notify: (targets: Parameters<InvalidationListener>[0]) => lease.notify(targets) };
}
