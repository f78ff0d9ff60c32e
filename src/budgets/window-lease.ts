import type { WindowGrant } from './key-limit.store.js';
import type { RateWindow } from './key-settings.js';
import { Lease } from './lease.js';

/**
 * This instance's lease of one window of a key: the window (its name, limit and length) it was
 * taken under, and the shared counter as of its last ask. `expiresAt` is the end of the fixed
 * window its tokens were granted in.
 */
export class WindowLease extends Lease {
  /** Dropped (its key changed): its unspent tokens go back once the requests waiting on it are done. */
  dropped = false;
  /** The shared counter as of the last ask (for the RateLimit fields); null: none yet. */
  counter: WindowGrant | null = null;

  constructor(
    readonly keyId: string,
    readonly window: RateWindow,
  ) {
    super(0);
    this.expiresAt = 0;
  }
}

/**
 * One key's leases on this instance, by window name, and the windows its last request counted
 * against (built by effectiveWindows once per setting and route, then kept here) with, at the same index,
 * the lease each took from. The key's next request with the same windows takes from those leases
 * and writes the RateLimit fields from them without a lookup: a lookup in a map of a thousand keys
 * is a cache miss or two per request, and a limited request made several.
 */
export class KeyLeases {
  readonly byName = new Map<string, WindowLease>();
  /** The windows the slots belong to. */
  slotsOf: readonly RateWindow[] | null = null;
  readonly slots: Array<WindowLease | undefined> = [];
  /** What `windows` was built from (SpendGuard's memo of the key's effective windows for a route). */
  own: readonly RateWindow[] | null = null;
  planned: readonly RateWindow[] | null = null;
  route = '';
  windows: readonly RateWindow[] | null = null;

  constructor(readonly keyId: string) {}
}
