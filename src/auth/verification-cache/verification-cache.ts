import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import type { KeyVerificationRow } from '../api-key-store.js';
import { Settings } from '../../settings/settings.js';
import type { MemberContext } from '../../directory/org-directory.js';
import { AuthMetrics } from '../auth-metrics.js';
import { VerificationLease, type CacheStamp, type InvalidationTargets } from './verification-lease.js';

/**
 * A key row as cached: everything verification needs, and no usage meters (those change per
 * request). `verified`: the exact key (as bytes) that has matched this row's current hash, once
 * one has; a request presenting the same bytes skips re-parsing and re-hashing (see
 * ApiKeyVerifier). Held only in this process's memory, which already holds API_KEY_SECRET and
 * SESSION_JWT_SECRET, so it gives a reader of that memory nothing more.
 */
export type CachedKeyRow = Omit<KeyVerificationRow, 'usage'> & { verified?: Buffer };

/** Even a coherent entry is re-read now and then, so a bug cannot keep one forever. */
const MAX_AGE_MS = 10 * 60_000;

/**
 * The in-process answers of the database path, usable only under the instance's lease:
 * API key rows by lookup (found rows only, revoked or expired ones included: the verifier
 * re-checks both on every request; an unknown lookup is never cached, since minting does not
 * notify), and a session's org standing by (user, requested org). Bounded LRUs (lru-cache).
 */
@Injectable()
export class VerificationCache {
  private readonly keys: LRUCache<string, CachedKeyRow>;
  private readonly sessions: LRUCache<string, MemberContext[]>;

  constructor(
    private readonly lease: VerificationLease,
    settings: Settings,
    private readonly metrics: AuthMetrics,
  ) {
    const max = settings.verificationCache.maxEntries;
    this.keys = new LRUCache({ max, ttl: MAX_AGE_MS });
    this.sessions = new LRUCache({ max, ttl: MAX_AGE_MS });
    lease.onInvalidate((t) => this.invalidate(t));
  }

  get enabled(): boolean {
    return this.lease.enabled;
  }

  /** A stamp to take before the database read whose answer may be cached. */
  stamp(): CacheStamp | null {
    return this.lease.stamp();
  }

  key(lookup: string): CachedKeyRow | undefined {
    if (!this.lease.usable()) return undefined;
    const row = this.keys.get(lookup);
    this.metrics.cacheLookup('key', row !== undefined);
    return row;
  }

  /** Caches a row read under `stamp`, if it still holds; returns the cached entry. */
  putKey(lookup: string, row: KeyVerificationRow, stamp: CacheStamp | null, nowMs: number): CachedKeyRow | undefined {
    if (!this.lease.holds(stamp)) return undefined;
    const { usage: _meters, ...cached } = row;
    // Never kept past the key's expiry (the verifier checks it too, against the service clock).
    const left = row.expiresAt ? row.expiresAt.getTime() - nowMs : MAX_AGE_MS;
    if (left <= 0) return undefined;
    this.keys.set(lookup, cached, { ttl: Math.min(left, MAX_AGE_MS) });
    return cached;
  }

  session(userId: string, requested: string | null): MemberContext[] | undefined {
    if (!this.lease.usable()) return undefined;
    const orgs = this.sessions.get(sessionKey(userId, requested));
    this.metrics.cacheLookup('session', orgs !== undefined);
    return orgs;
  }

  putSession(userId: string, requested: string | null, orgs: MemberContext[], stamp: CacheStamp | null): void {
    if (this.lease.holds(stamp)) this.sessions.set(sessionKey(userId, requested), orgs);
  }

  private invalidate(t: InvalidationTargets | null): void {
    if (!t) {
      this.keys.clear();
      this.sessions.clear();
      return;
    }
    const staleKeys: string[] = [];
    for (const [lookup, row] of this.keys.entries()) {
      if (row.id === t.keyId || row.userId === t.userId || row.orgId === t.orgId) staleKeys.push(lookup);
    }
    for (const k of staleKeys) this.keys.delete(k);
    if (t.userId === null && t.orgId === null) return;
    const staleSessions: string[] = [];
    for (const [k, orgs] of this.sessions.entries()) {
      if (k.startsWith(`${t.userId}|`) || orgs.some((o) => o.orgId === t.orgId || o.userId === t.userId))
        staleSessions.push(k);
    }
    for (const k of staleSessions) this.sessions.delete(k);
  }
}

const sessionKey = (userId: string, requested: string | null) => `${userId}|${requested ?? ''}`;
