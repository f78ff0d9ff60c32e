import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { KeyLimitStore } from './key-limit.store.js';
import type { RateWindow } from './key-settings.js';

/**
 * The shared bucket holds this share of a window's limit: the burst beyond the steady rate, and
 * the slack that keeps instances' late asks (a busy event loop) from losing allowance.
 */
export const BURST_SHARE = 0.08;
/**
 * An instance leases at most this share of a window's limit at a time (at least the request's
 * cost) and may keep it for the window's length: what all instances hold unspent adds at most
 * this share per instance to any window.
 */
export const LEASE_SHARE = 0.005;

interface Lease {
  tokens: number;
  expiresAt: number;
  /** The shared bucket was empty: refuse locally until then, without asking. */
  notBefore: number;
  /** The shared bucket's tokens as of the last lease (for the RateLimit field). */
  left: number;
  pending: Promise<void> | null;
  /** What the requests waiting on this lease need together: the next lease asks for all of it. */
  demand: number;
}

/**
 * A request that arrives while this instance is asking for a lease waits for it, and asks again
 * with the others waiting while the bucket still grants tokens, for at most this long (the lease
 * request's own bound), then is answered.
 */
export const LEASE_WAIT_MS = 5000;

/** 0: admitted. Otherwise refused, and the number of milliseconds until a retry can succeed. */
export type Admission = number;

/**
 * Rate windows shared by every instance: each window of a key is a token bucket in PostgreSQL
 * (key_rate_windows) holding at most BURST_SHARE of the limit and refilled at limit / window;
 * an instance leases what the bucket holds in one statement, spends it from memory, and asks
 * again when it runs out (one request per key and window at a time). An empty bucket is
 * remembered until its next token is due, so refused requests cost no database traffic.
 * Over any span T a key gets at most burst + limit * T / window + what the instances hold
 * (LEASE_SHARE each): within 1.1 x limit over any window for up to 4 instances, and the steady
 * rate when it asks for more.
 */
@Injectable()
export class WindowLeases {
  /**
   * Key id → window name → lease. Looked up by the key id and the window's name as the verified
   * row holds them (strings whose hash V8 keeps), never by a string built per request: hashing a
   * fresh concatenation on every lookup cost more than the rest of the limits together.
   */
  private readonly leases = new LRUCache<string, Map<string, Lease>>({ max: 100_000 });

  constructor(private readonly store: KeyLimitStore) {}

  /** Takes `cost` from the window, synchronously when this instance holds enough. */
  take(keyId: string, w: RateWindow, cost: number, now: number): Admission | Promise<Admission> {
    let byName = this.leases.get(keyId);
    if (!byName) this.leases.set(keyId, (byName = new Map()));
    let lease = byName.get(w.name);
    if (lease && lease.expiresAt > now && lease.tokens >= cost) {
      lease.tokens -= cost;
      return 0;
    }
    if (lease && lease.notBefore > now) return lease.notBefore - now;
    if (!lease)
      byName.set(w.name, (lease = { tokens: 0, expiresAt: 0, notBefore: 0, left: 0, pending: null, demand: 0 }));
    return this.lease(keyId, w, cost, lease);
  }

  /** Gives back what a refused request took (never written anywhere). */
  giveBack(keyId: string, w: RateWindow, cost: number): void {
    const lease = this.leases.get(keyId)?.get(w.name);
    if (lease) lease.tokens += cost;
  }

  /** Tokens known to remain (this instance's and the shared bucket's at its last lease). */
  remaining(keyId: string, w: RateWindow): number {
    const lease = this.leases.peek(keyId)?.get(w.name);
    return lease ? Math.max(0, Math.floor(lease.tokens + lease.left)) : w.limit;
  }

  private async lease(keyId: string, w: RateWindow, cost: number, lease: Lease): Promise<Admission> {
    // Waits with the others for the lease in flight, then asks again for all who still wait, as
    // long as the bucket grants something: a burst gets what the bucket holds, none is refused early.
    const deadline = Date.now() + LEASE_WAIT_MS;
    lease.demand += cost;
    try {
      for (;;) {
        if (!lease.pending) lease.pending = this.fetch(keyId, w, cost, lease).finally(() => (lease.pending = null));
        await lease.pending;
        const now = Date.now();
        if (lease.expiresAt > now && lease.tokens >= cost) {
          lease.tokens -= cost;
          return 0;
        }
        if (lease.notBefore > now) return lease.notBefore - now;
        if (now >= deadline) return Math.max(1, lease.notBefore - now);
      }
    } finally {
      lease.demand -= cost;
    }
  }

  private async fetch(keyId: string, w: RateWindow, cost: number, lease: Lease): Promise<void> {
    const windowMs = w.window_seconds * 1000;
    const perMs = w.limit / windowMs;
    const capacity = Math.max(cost, Math.floor(w.limit * BURST_SHARE), 1);
    const want = Math.max(cost, Math.ceil(w.limit * LEASE_SHARE), lease.demand);
    const at = Date.now();
    const grant = await this.store.leaseWindow(keyId, w.name, capacity, perMs, want, new Date(at), cost);
    const now = Date.now();
    if (lease.expiresAt <= now) lease.tokens = 0;
    lease.left = grant.left;
    if (grant.granted > 0) {
      lease.tokens += grant.granted;
      lease.expiresAt = now + windowMs;
    } else {
      lease.notBefore = now + Math.max(1, Math.ceil((cost - grant.left) / perMs));
    }
  }
}
