import { Injectable } from '@nestjs/common';
import type { KeyVerificationRow } from './api-key-store.js';
import { Settings } from '../settings/settings.js';
import type { MemberContext } from '../directory/org-directory.js';
import { AuthMetrics } from './auth-metrics.js';
import { CoherenceLease, type CacheStamp } from '../coherence/coherence-lease.js';
import { CoherentCache } from '../coherence/coherent-cache.js';

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
 * Auth's use of the coherent cache (src/coherence/): the answers of the verification read,
 * usable only under the instance's lease. API key rows by lookup (found rows only, revoked or
 * expired ones included: the verifier re-checks both on every request; an unknown lookup is
 * never cached, since minting does not notify), and a session's org standing by (user,
 * requested org). A change drops the rows of the key, user or org it names.
 */
@Injectable()
export class VerificationCache {
  private readonly keys: CoherentCache<string, CachedKeyRow>;
  private readonly sessions: CoherentCache<string, MemberContext[]>;

  constructor(lease: CoherenceLease, settings: Settings, metrics: AuthMetrics) {
    const max = settings.verificationCache.maxEntries;
    this.keys = new CoherentCache(lease, {
      max,
      maxAgeMs: MAX_AGE_MS,
      invalidatedBy: (t) => (_lookup, row) => row.id === t.keyId || row.userId === t.userId || row.orgId === t.orgId,
      onLookup: (hit) => metrics.cacheLookup('key', hit),
    });
    this.sessions = new CoherentCache(lease, {
      max,
      maxAgeMs: MAX_AGE_MS,
      invalidatedBy: (t) => {
        if (t.userId === null && t.orgId === null) return null;
        const ofUser = `${t.userId}|`;
        return (key, orgs) => key.startsWith(ofUser) || orgs.some((o) => o.orgId === t.orgId || o.userId === t.userId);
      },
      onLookup: (hit) => metrics.cacheLookup('session', hit),
    });
  }

  get enabled(): boolean {
    return this.keys.enabled;
  }

  /** A stamp to take before the database read whose answer may be cached. */
  stamp(): CacheStamp | null {
    return this.keys.stamp();
  }

  key(lookup: string): CachedKeyRow | undefined {
    return this.keys.get(lookup);
  }

  /** Caches a row read under `stamp`, if it still holds; returns the cached entry. */
  putKey(lookup: string, row: KeyVerificationRow, stamp: CacheStamp | null, nowMs: number): CachedKeyRow | undefined {
    // Never kept past the key's expiry (the verifier checks it too, against the service clock).
    const left = row.expiresAt ? row.expiresAt.getTime() - nowMs : MAX_AGE_MS;
    if (left <= 0) return undefined;
    const { usage: _meters, ...cached } = row;
    return this.keys.set(lookup, cached, stamp, left) ? cached : undefined;
  }

  session(userId: string, requested: string | null): MemberContext[] | undefined {
    return this.sessions.get(sessionKey(userId, requested));
  }

  putSession(userId: string, requested: string | null, orgs: MemberContext[], stamp: CacheStamp | null): void {
    this.sessions.set(sessionKey(userId, requested), orgs, stamp);
  }
}

const sessionKey = (userId: string, requested: string | null) => `${userId}|${requested ?? ''}`;
