import { Injectable } from '@nestjs/common';

export type VerificationOutcome =
  | 'ok'
  | 'malformed'
  | 'unknown'
  | 'revoked'
  | 'pending'
  | 'disabled'
  | 'expired'
  | 'not_member'
  | 'not_configured'
  | 'error';

type Listener = (outcome: VerificationOutcome) => void;

/** Which verification cache answered or missed: API keys, or a session's org standing. */
export type CacheKind = 'key' | 'session';

/** What the verification cache reports (src/auth/verification-cache.ts, on the lease of src/coherence/). */
export interface CacheListener {
  lookup?(kind: CacheKind, hit: boolean): void;
  /** Seconds a change waited until every leased instance had applied it. */
  acknowledged?(seconds: number): void;
}

/**
 * Counts key verifications by outcome. Kept free of any metrics library so the module does
 * not impose one on a host; the standalone app subscribes and exports them to Prometheus.
 */
@Injectable()
export class AuthMetrics {
  private readonly listeners: Listener[] = [];
  readonly counts: Record<VerificationOutcome, number> = {
    ok: 0,
    malformed: 0,
    unknown: 0,
    revoked: 0,
    pending: 0,
    disabled: 0,
    expired: 0,
    not_member: 0,
    not_configured: 0,
    error: 0,
  };

  verification(outcome: VerificationOutcome): void {
    this.counts[outcome]++;
    for (const l of this.listeners) l(outcome);
  }

  onVerification(listener: Listener): void {
    this.listeners.push(listener);
  }

  private readonly cacheListeners: CacheListener[] = [];
  readonly cacheCounts = { key: { hit: 0, miss: 0 }, session: { hit: 0, miss: 0 } };
  /** Whether this instance holds a valid cache lease right now; set by the lease. */
  leaseValid: () => boolean = () => false;

  cacheLookup(kind: CacheKind, hit: boolean): void {
    this.cacheCounts[kind][hit ? 'hit' : 'miss']++;
    for (const l of this.cacheListeners) l.lookup?.(kind, hit);
  }

  invalidationAcknowledged(seconds: number): void {
    for (const l of this.cacheListeners) l.acknowledged?.(seconds);
  }

  onCache(listener: CacheListener): void {
    this.cacheListeners.push(listener);
  }
}
