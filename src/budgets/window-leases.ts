import { Injectable, Logger } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { Clock, epochMs } from '../common/clock.js';
import { KeyLimitStore } from './key-limit.store.js';
import type { LeaseSource } from './lease.js';
import { KeyLeases, WindowLease } from './window-lease.js';
import type { RateWindow } from './key-settings.js';
import { availableAt, dueAt, wholeBackAt } from './sliding-window.js';

/**
 * An instance leases at most this share of a window's limit at a time (at least the request's
 * cost, and all that the requests waiting on it need): with a large limit a lease lasts many
 * requests and what instances hold unspent stays small.
 */
export const LEASE_SHARE = 0.005;

/** 0: admitted. Otherwise refused, and the number of milliseconds until a retry can succeed. */
export type Admission = number;

/**
 * Rate windows shared by every instance: each window of a key is a sliding-window counter in
 * PostgreSQL (key_rate_windows; sliding-window.ts has the arithmetic): a fixed window aligned to
 * multiples of its length, plus the previous window's count weighted by how much of it the sliding
 * window still covers. An instance leases a share of what is available in one statement, spends it
 * from memory until the fixed window it was granted in ends, and asks again when it runs out (one
 * ask per key and window at a time). A window with nothing available is remembered until enough is
 * due, so refused requests cost no database traffic. Every fixed window admits at most its limit,
 * whatever the number of instances, and a burst gets the whole window.
 *
 * A lease belongs to the setting (limit and length) it was taken under. When the key changes
 * (`drop`, on the change's notification) or a request comes with another setting, the lease is
 * dropped and what it holds unspent is given back to the counter, so the count is what was spent:
 * after "100,000 a day" becomes "25 a day" with 20 spent, 5 more pass, on whichever instance.
 */
@Injectable()
export class WindowLeases {
  private readonly logger = new Logger('WindowLeases');
  /**
   * Key id → window name → lease. Looked up by the key id and the window's name as the verified
   * row holds them (strings whose hash V8 keeps), never by a string built per request: hashing a
   * fresh concatenation on every lookup cost more than the rest of the limits together.
   */
  private readonly leases = new LRUCache<string, KeyLeases>({
    max: 100_000,
    // The key's leases as the last take() found them: forgotten with them (evicted, or deleted by drop()).
    dispose: (held) => {
      if (held === this.last) this.last = null;
    },
  });
  /**
   * The key of the last take(): the RateLimit fields of the same request read its leases right
   * after, and a second lookup in a cache of 100,000 keys is a cache miss or two on every limited
   * request.
   */
  private last: KeyLeases | null = null;
  /** Key id → its dropped leases' give-backs still under way: this instance's next lease of the key waits for them. */
  private readonly returning = new Map<string, Promise<void>>();
  private readonly source: LeaseSource<WindowLease> = {
    ask: (lease, cost) => this.ask(lease, cost),
    now: () => epochMs(this.clock),
    left: (lease) => {
      if (lease.dropped && lease.demand === 0) this.giveBackUnspent(lease);
    },
  };

  constructor(
    private readonly store: KeyLimitStore,
    private readonly clock: Clock,
  ) {}

  /** Takes `cost` from the window, synchronously when this instance holds enough. */
  take(keyId: string, w: RateWindow, cost: number, now: number): Admission | Promise<Admission> {
    const held = this.held(keyId);
    return this.takeFrom(held, w, this.leaseOf(held, w), cost, now);
  }

  /**
   * Takes `cost` from the `i`-th of a request's `windows` (the same array for every request of the
   * key with the same setting on the same route): from the lease the key's last request with
   * these windows took from, while it is in use, else from the window's lease by name.
   */
  takeAt(
    keyId: string,
    windows: readonly RateWindow[],
    i: number,
    cost: number,
    now: number,
  ): Admission | Promise<Admission> {
    const held = this.held(keyId);
    if (held.slotsOf !== windows) {
      held.slotsOf = windows;
      held.slots.length = 0;
    }
    let lease = held.slots[i];
    if (lease === undefined || lease.dropped) held.slots[i] = lease = this.leaseOf(held, windows[i]);
    return this.takeFrom(held, windows[i], lease, cost, now);
  }

  /**
   * The windows a key's request counts against, remembered on the key's leases: `build` runs when
   * the key's setting (`own`), its plan's windows or the route's window name differ from its last
   * request's, which spares the lookups of a key's effective windows on every request.
   */
  windowsOf<W extends RateWindow>(
    keyId: string,
    own: readonly RateWindow[] | null,
    planned: readonly RateWindow[] | null,
    route: string,
    build: (own: readonly RateWindow[] | null, planned: readonly RateWindow[] | null, route: string) => readonly W[],
  ): readonly W[] {
    const held = this.held(keyId);
    if (held.windows === null || held.own !== own || held.planned !== planned || held.route !== route) {
      held.windows = build(own, planned, route);
      held.own = own;
      held.planned = planned;
      held.route = route;
    }
    return held.windows as readonly W[];
  }

  /** The key's leases here (peek: a get moves the key to the cache's tail, four random writes, on every request). */
  private held(keyId: string): KeyLeases {
    // The same request's windows, then its take: the cache's dispose forgets `last` when it goes.
    if (this.last !== null && this.last.keyId === keyId) return this.last;
    let held = this.leases.peek(keyId);
    if (!held) this.leases.set(keyId, (held = new KeyLeases(keyId)));
    this.last = held;
    return held;
  }

  /** The key's lease of the window by its name, under the window's setting: a lease taken under another setting is retired. */
  private leaseOf(held: KeyLeases, w: RateWindow): WindowLease {
    let lease = held.byName.get(w.name);
    if (lease && (lease.window.limit !== w.limit || lease.window.window_seconds !== w.window_seconds)) {
      // Leased under another setting of the window: not this one's to spend.
      this.retire(lease);
      lease = undefined;
    }
    if (!lease) held.byName.set(w.name, (lease = new WindowLease(held.keyId, w)));
    return lease;
  }

  private takeFrom(
    held: KeyLeases,
    w: RateWindow,
    lease: WindowLease,
    cost: number,
    now: number,
  ): Admission | Promise<Admission> {
    if (lease.take(cost, now)) {
      if (now >= lease.aheadFrom) this.leaseAhead(lease);
      return 0;
    }
    if (lease.next !== null && lease.advance(now) && lease.take(cost, now)) return 0;
    if (lease.refuses(cost, now)) return lease.notBefore - now;
    // Recency is refreshed when the key asks for a lease, not on every request: the cache drops the keys that leased least recently.
    this.leases.get(held.keyId);
    return this.lease(lease, cost);
  }

  /**
   * Drops every lease of a key (its settings changed): nothing it held is spent any more, and what
   * it held unspent goes back to the shared counters. Resolves once given back.
   */
  drop(keyId: string): Promise<void> | undefined {
    const held = this.leases.get(keyId);
    if (!held) return undefined;
    this.leases.delete(keyId);
    for (const lease of held.byName.values()) this.retire(lease);
    return this.returning.get(keyId);
  }

  /**
   * Gives back what a refused request took at `takenAt` (never written anywhere), unless the
   * window it was taken from has ended: a window's tokens are never spent in the next.
   */
  giveBack(keyId: string, w: RateWindow, cost: number, takenAt: number): void {
    const lease = this.leases.peek(keyId)?.byName.get(w.name);
    // Not into a lease of another setting: a token taken before a change stays spent.
    if (
      lease &&
      lease.window.limit === w.limit &&
      lease.window.window_seconds === w.window_seconds &&
      takenAt < lease.expiresAt &&
      takenAt >= lease.expiresAt - w.window_seconds * 1000
    )
      lease.tokens += cost;
  }

  /**
   * What is known to remain at `now`: this instance's tokens and what the counter had available at
   * its last lease. `windows` and `i`: the request's windows and `w`'s index in them, as given to
   * takeAt (its lease is then found without a lookup by name).
   */
  remaining(keyId: string, w: RateWindow, now: number, windows?: readonly RateWindow[], i = -1): number {
    const lease = this.find(keyId, w.name, windows, i);
    const c = lease?.counter;
    if (!lease || !c) return w.limit;
    const held = lease.expiresAt > now ? lease.tokens : 0;
    const shared = availableAt(w.limit, w.window_seconds * 1000, c.start, c.previous, c.current, now);
    return Math.max(0, Math.min(w.limit, Math.floor(held + shared)));
  }

  /** Milliseconds from `now` until the whole limit is available again, as far as this instance knows. */
  resetIn(keyId: string, w: RateWindow, now: number, windows?: readonly RateWindow[], i = -1): number {
    const c = this.find(keyId, w.name, windows, i)?.counter;
    if (!c) return 0;
    return Math.max(0, wholeBackAt(w.window_seconds * 1000, c.start, c.previous, c.current) - now);
  }

  private find(
    keyId: string,
    name: string,
    windows: readonly RateWindow[] | undefined,
    i: number,
  ): WindowLease | undefined {
    const held = this.last?.keyId === keyId ? this.last : this.leases.peek(keyId);
    if (!held) return undefined;
    const lease = held.slotsOf === windows ? held.slots[i] : undefined;
    // A dropped lease is no longer the window's (nor in byName).
    return lease && !lease.dropped ? lease : held.byName.get(name);
  }

  private async lease(lease: WindowLease, cost: number): Promise<Admission> {
    if (await lease.wait(cost, this.source)) return 0;
    return Math.max(1, lease.notBefore - epochMs(this.clock));
  }

  /** Takes a lease out of use; its unspent tokens go back now, or when the last request waiting on it is done. */
  private retire(lease: WindowLease): void {
    const byName = this.leases.peek(lease.keyId)?.byName;
    if (byName?.get(lease.window.name) === lease) byName.delete(lease.window.name);
    lease.dropped = true;
    if (lease.demand === 0) this.giveBackUnspent(lease);
  }

  /** Leases the next fixed window's tokens before it starts, once, in the background (WindowLease.advance spends them). */
  private leaseAhead(lease: WindowLease): void {
    lease.aheadFrom = Number.POSITIVE_INFINITY;
    const { keyId, window: w } = lease;
    const start = lease.expiresAt;
    if (this.returning.has(keyId)) return;
    const want = Math.ceil(w.limit * LEASE_SHARE);
    this.store.leaseWindow(keyId, w.name, w.limit, w.window_seconds, want, new Date(start), 1).then(
      (grant) => this.giveBackTokens(keyId, w.name, lease.grantedAhead(grant, start), grant.start, w.window_seconds),
      (error: unknown) =>
        this.logger.warn(`could not lease window ${w.name} of key ${keyId} ahead: ${(error as Error).message}`),
    );
  }

  private giveBackUnspent(lease: WindowLease): void {
    const { name, window_seconds: seconds } = lease.window;
    const start = lease.expiresAt - seconds * 1000;
    const next = lease.next;
    lease.next = null;
    if (next) this.giveBackTokens(lease.keyId, name, next.tokens, next.start, seconds);
    this.giveBackTokens(lease.keyId, name, lease.release(), start, seconds);
    lease.expiresAt = 0;
  }

  /** Gives `amount` unspent tokens of the fixed window starting at `start` back to the shared counter. */
  private giveBackTokens(keyId: string, name: string, amount: number, start: number, seconds: number): void {
    if (amount <= 0) return;
    const before = this.returning.get(keyId);
    const done: Promise<void> = Promise.resolve(before)
      .then(() => this.store.returnWindow(keyId, name, amount, new Date(start), seconds))
      .catch((error: unknown) =>
        this.logger.warn(
          `could not give back ${amount} of window ${name} of key ${keyId}: ${(error as Error).message}`,
        ),
      )
      .finally(() => {
        if (this.returning.get(keyId) === done) this.returning.delete(keyId);
      });
    this.returning.set(keyId, done);
  }

  private async ask(lease: WindowLease, cost: number): Promise<boolean> {
    const { keyId, window: w } = lease;
    const windowMs = w.window_seconds * 1000;
    // A request dearer than the whole window is admitted into an otherwise empty one.
    const limit = Math.max(w.limit, cost);
    const want = Math.max(cost, Math.ceil(w.limit * LEASE_SHARE), lease.demand);
    const returning = this.returning.get(keyId);
    if (returning) await returning;
    const at = epochMs(this.clock);
    const grant = await this.store.leaseWindow(keyId, w.name, limit, w.window_seconds, want, new Date(at), cost);
    lease.granted(grant, want);
    // Refused until enough is due for this cost, whatever a request costs (not `refuse`: no cheaper one asks before).
    if (grant.granted === 0)
      lease.notBefore = Math.max(
        at + 1,
        Math.ceil(dueAt(limit, windowMs, grant.start, grant.previous, grant.current, cost)),
      );
    return true;
  }
}
