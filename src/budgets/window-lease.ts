import type { WindowGrant } from './key-limit.store.js';
import type { RateWindow } from './key-settings.js';
import { Lease } from './lease.js';

/**
 * How long before its fixed window ends a busy lease asks for the next window's tokens (at most
 * a tenth of the window): the keys' first requests after the boundary then take from memory
 * instead of all waiting on a round trip at once.
 */
export const LEASE_AHEAD_MS = 1000;

/** The next fixed window's tokens, leased ahead of its start. */
export interface LeasedAhead {
  tokens: number;
  start: number;
  counter: WindowGrant;
}

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
  /** From this instant, a request taken from this lease also leases the next window ahead; Infinity: not in this window. */
  aheadFrom = Number.POSITIVE_INFINITY;
  /** The next fixed window's tokens, spent once it starts; null: none leased ahead. */
  next: LeasedAhead | null = null;

  constructor(
    readonly keyId: string,
    readonly window: RateWindow,
  ) {
    super(0);
    this.expiresAt = 0;
  }

  /**
   * Puts a grant's tokens in the lease (the fixed window starting at `grant.start`): added to what
   * it holds in that window, or replacing what it held of an earlier one. Only a lease far from
   * its limit leases ahead: at most half the window counted at the grant, and a lease of at most
   * a sixteenth of the limit. Near its limit, a key's window is shared between instances as it
   * is asked for, never spent ahead.
   */
  granted(grant: WindowGrant, want: number): void {
    const ms = this.window.window_seconds * 1000;
    const end = grant.start + ms;
    // Tokens left from an earlier fixed window end with it.
    if (end !== this.expiresAt) {
      this.tokens = 0;
      this.expiresAt = end;
    }
    this.tokens += grant.granted;
    this.counter = grant;
    // A request asked in the window leased ahead before it started (this lease ran out first).
    if (this.next !== null && this.next.start === grant.start) {
      this.tokens += this.next.tokens;
      this.next = null;
    }
    const { limit } = this.window;
    this.aheadFrom =
      grant.current * 2 <= limit && want * 16 <= limit
        ? end - Math.min(LEASE_AHEAD_MS, ms / 10)
        : Number.POSITIVE_INFINITY;
  }

  /** The answer to a lease ahead of the window starting at `start`: 0 when kept, else what to give back. */
  grantedAhead(grant: WindowGrant, start: number): number {
    if (this.dropped) return grant.granted;
    if (grant.start === start && this.expiresAt === start) this.next = { tokens: grant.granted, start, counter: grant };
    // A request already asked in that window meanwhile.
    else if (this.expiresAt === grant.start + this.window.window_seconds * 1000) this.tokens += grant.granted;
    else return grant.granted;
    return 0;
  }

  /**
   * Once its fixed window has ended at `t`: moves to the next window's tokens leased ahead, if the
   * next window is the one running at `t` (after a longer gap they ended unspent, counted as the
   * expired ones are). True when it moved.
   */
  advance(t: number): boolean {
    const next = this.next;
    if (next === null || t < this.expiresAt || t < next.start) return false;
    this.next = null;
    if (t >= next.start + this.window.window_seconds * 1000) return false;
    this.granted({ ...next.counter, granted: next.tokens }, next.tokens);
    return true;
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
