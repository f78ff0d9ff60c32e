import { LRUCache } from 'lru-cache';
import type { CacheStamp, CoherenceLease, InvalidationTargets } from './coherence-lease.js';

export interface CoherentCacheOptions<K, V> {
  /** How many entries at most (least recently used go first). */
  max: number;
  /** How long an entry lives under the lease even if no change names it (undefined: until one does, or it is evicted). */
  maxAgeMs?: number;
  /**
   * Without a lease at all (the cache turned off, a database that cannot be leased): entries live
   * this long, read from memory without coherence. Undefined: nothing is kept without a lease.
   */
  unleasedTtlMs?: number;
  /**
   * Which entries a committed change makes stale: a test for this change, or null when it
   * concerns none of them. Called once per change notification (a lapse clears everything).
   */
  invalidatedBy: (targets: InvalidationTargets) => ((key: K, value: V) => boolean) | null;
  /** Told of every lookup answered under the lease (hit or miss); for metrics. */
  onLookup?: (hit: boolean) => void;
}

/** The stamp of a read made without a lease, when the cache keeps such answers (unleasedTtlMs). */
const UNLEASED: CacheStamp = -1;

/**
 * A bounded in-process cache (lru-cache) whose entries stay coherent with PostgreSQL through the
 * instance's CoherenceLease: answered only while the lease is usable; an answer read from the
 * database is kept only if no change notification arrived since the read began (stamp before
 * the read, `set` after it); the entries a change names are dropped when it is announced, every
 * entry when the lease lapses. `get` is the hot path: no promise and no allocation.
 */
export class CoherentCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>> {
  private readonly entries: LRUCache<K, V>;
  private readonly leased: boolean;
  /** The longest an entry may live: maxAgeMs under a lease, else unleasedTtlMs (Infinity: no limit). */
  private readonly ttlCap: number;

  constructor(
    private readonly lease: CoherenceLease,
    private readonly options: CoherentCacheOptions<K, V>,
  ) {
    this.leased = lease.enabled;
    this.ttlCap = (this.leased ? options.maxAgeMs : options.unleasedTtlMs) ?? Number.POSITIVE_INFINITY;
    this.entries = new LRUCache<K, V>({ max: options.max });
    lease.onInvalidate((targets) => this.invalidate(targets));
  }

  /** Whether anything is ever kept: under a lease, or without one for unleasedTtlMs. */
  get enabled(): boolean {
    return this.leased || this.options.unleasedTtlMs !== undefined;
  }

  /** The entry, if it may be answered from memory now. */
  get(key: K): V | undefined {
    if (!this.leased) return this.options.unleasedTtlMs === undefined ? undefined : this.entries.get(key);
    if (!this.lease.usable()) return undefined;
    const value = this.entries.get(key);
    this.options.onLookup?.(value !== undefined);
    return value;
  }

  /** Take it before the database read whose answer may be kept; null: it will not be. */
  stamp(): CacheStamp | null {
    if (this.leased) return this.lease.stamp();
    return this.options.unleasedTtlMs === undefined ? null : UNLEASED;
  }

  /**
   * Keeps `value`, read under `stamp`, if no change was announced since (and the lease still
   * holds); `ttlMs` shortens its life (an expiry of its own). Returns whether it was kept.
   */
  set(key: K, value: V, stamp: CacheStamp | null, ttlMs?: number): boolean {
    if (stamp === null || (this.leased ? !this.lease.holds(stamp) : stamp !== UNLEASED)) return false;
    const ttl = Math.min(ttlMs ?? Number.POSITIVE_INFINITY, this.ttlCap);
    if (ttl <= 0) return false;
    this.entries.set(key, value, ttl === Number.POSITIVE_INFINITY ? undefined : { ttl });
    return true;
  }

  /** Load-through: reads the value (stamp first) and keeps it when no change raced the read. */
  async load(key: K, read: () => Promise<V>, ttlOf?: (value: V) => number | undefined): Promise<V> {
    const stamp = this.stamp();
    const value = await read();
    this.set(key, value, stamp, ttlOf?.(value));
    return value;
  }

  private invalidate(targets: InvalidationTargets | null): void {
    if (!targets) {
      this.entries.clear();
      return;
    }
    const stale = this.options.invalidatedBy(targets);
    if (!stale) return;
    const keys: K[] = [];
    for (const [key, value] of this.entries.entries()) if (stale(key, value)) keys.push(key);
    for (const key of keys) this.entries.delete(key);
  }
}
