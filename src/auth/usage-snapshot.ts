import type { Principal } from './principal.js';
import type { Counters } from '../common/meters.js';

/**
 * Today's meters as read by the very statement that verified the request's API key, so that
 * GET /usage with a key costs one round trip, not two. Held per principal object, that is per
 * request: nothing outlives the request, and the values are no older than its verification.
 */
const snapshots = new WeakMap<Principal, { day: string; counters: Counters }>();

export function attachUsageSnapshot(principal: Principal, day: string, counters: Counters): void {
  snapshots.set(principal, { day, counters });
}

/** The snapshot when it was taken for `day`; otherwise undefined (read the meters instead). */
export function usageSnapshotOf(principal: Principal, day: string): Counters | undefined {
  const s = snapshots.get(principal);
  return s && s.day === day ? s.counters : undefined;
}
