import { Logger } from '@nestjs/common';
import { JwksClient } from 'jwks-rsa';
import { LRUCache } from 'lru-cache';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import type { Clock } from '../common/clock.js';
import { throttledUnit } from './auth-failure-throttle.js';

/** How often the key set is fetched again on schedule. */
export const JWKS_REFRESH_MS = 10 * 60_000;
/** After a failed fetch, the next scheduled try comes this much sooner. */
export const JWKS_RETRY_MS = 30_000;
/** A token with a `kid` we do not hold may cause a fetch at most this often (service-wide). */
export const JWKS_UNKNOWN_KID_REFRESH_MS = 60_000;
/** A `kid` a fresh key set did not contain is refused without a fetch for this long. */
export const JWKS_UNKNOWN_KID_TTL_MS = 5 * 60_000;
const UNKNOWN_KIDS_MAX = 10_000;
/** Tokens with a `kid` we do not hold, per client (IPv4 address or IPv6 /64) and minute, that may cause a fetch. */
export const JWKS_UNKNOWN_KID_PER_CLIENT = 5;
const FETCH_TIMEOUT_MS = 5_000;

/**
 * An identity provider's signing keys, fetched from its JWKS URL, held so that what a token
 * says cannot shut sessions out:
 * - the last good key set is kept until a fetch returns a good one (a failed or empty fetch
 *   changes nothing), so a published key keeps verifying whatever the endpoint does;
 * - the set is fetched on a schedule (from the first session token on, every 10 minutes; 30 s
 *   after a failure), not per token;
 * - a token naming a `kid` we do not hold may cause one fetch (a rotation picked up on first
 *   sight), at most once a minute for the whole service and only for a client within its
 *   allowance (5 such tokens a minute, rate-limiter-flexible in memory); a `kid` a fresh set did
 *   not contain is remembered (bounded LRU, 5 minutes) and refused without one.
 * So random `kid`s cost the endpoint at most one fetch a minute, and never a real key's place.
 */
export class JwksKeySet {
  private readonly logger = new Logger('JwksKeySet');
  private readonly client: JwksClient;
  private keys = new Map<string, KeyObject>();
  private readonly unknownKids = new LRUCache<string, true>({ max: UNKNOWN_KIDS_MAX, ttl: JWKS_UNKNOWN_KID_TTL_MS });
  private readonly perClient = new RateLimiterMemory({
    keyPrefix: 'jwks_unknown_kid',
    points: JWKS_UNKNOWN_KID_PER_CLIENT,
    duration: 60,
  });
  private inFlight: Promise<boolean> | null = null;
  /** Service-clock time of the last fetch a token caused. */
  private lastUnknownKidFetch = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | null = null;
  private started = false;
  private stopped = false;

  constructor(
    jwksUri: string,
    private readonly clock: Clock,
  ) {
    this.client = new JwksClient({ jwksUri, cache: false, rateLimit: false, timeout: FETCH_TIMEOUT_MS });
  }

  /** Ends the schedule (a fetch under way finishes, but nothing follows it). */
  stop(): void {
    this.started = true; // never starts after a stop
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /**
   * The key for `kid`: at once when held; else, perhaps after one fetch, the key or null. The
   * first call starts the schedule with a fetch it waits for (a process that verifies no session,
   * such as the CLI, never fetches).
   */
  key(kid: string, client: string | undefined): KeyObject | Promise<KeyObject | null> {
    if (!this.started) {
      this.started = true;
      this.schedule(this.refresh());
    }
    return this.keys.get(kid) ?? this.unknown(kid, client ?? 'unknown');
  }

  private async unknown(kid: string, client: string): Promise<KeyObject | null> {
    if (this.inFlight) await this.inFlight; // the first fetch, or one already under way
    const held = this.keys.get(kid);
    if (held || this.unknownKids.has(kid)) return held ?? null;
    const now = this.clock.now().getTime();
    if (now - this.lastUnknownKidFetch < JWKS_UNKNOWN_KID_REFRESH_MS) return null;
    try {
      await this.perClient.consume(throttledUnit(client));
    } catch {
      return null; // this client's allowance is spent (a RateLimiterRes rejection)
    }
    if (now - this.lastUnknownKidFetch < JWKS_UNKNOWN_KID_REFRESH_MS) return this.keys.get(kid) ?? null;
    this.lastUnknownKidFetch = now;
    const fetched = await this.refresh();
    const key = this.keys.get(kid);
    if (!key && fetched) this.unknownKids.set(kid, true);
    return key ?? null;
  }

  /** One fetch at a time; true when it brought a good set (which then replaces the held one). */
  private refresh(): Promise<boolean> {
    if (this.inFlight) return this.inFlight;
    // Never rejects: whatever goes wrong, the held set stays and the answer is false.
    const attempt = this.client
      .getSigningKeys()
      .then((signing) => this.replaceWith(signing.flatMap((k) => (k.kid ? [[k.kid, k.getPublicKey()] as const] : []))))
      .catch((error: unknown) => this.failed(error));
    this.inFlight = attempt;
    void attempt.finally(() => (this.inFlight = null));
    return attempt;
  }

  private replaceWith(published: ReadonlyArray<readonly [string, string]>): boolean {
    const next = new Map<string, KeyObject>();
    for (const [kid, pem] of published) {
      try {
        next.set(kid, createPublicKey(pem));
      } catch {
        // A key Node cannot read is skipped; the others still count.
      }
    }
    if (next.size === 0) return this.failed(new Error('no usable signing key with a kid'));
    this.keys = next;
    return true;
  }

  private failed(error: unknown): false {
    this.logger.warn(
      `JWKS fetch failed; keeping the ${this.keys.size} key(s) held: ${error instanceof Error ? error.message : String(error)}`,
    );
    return false;
  }

  /** The next scheduled fetch, once `fetch` has settled: sooner after a failure. */
  private schedule(fetch: Promise<boolean>): void {
    void fetch.then((ok) => {
      if (this.stopped) return;
      this.timer = setTimeout(() => this.schedule(this.refresh()), ok ? JWKS_REFRESH_MS : JWKS_RETRY_MS);
      this.timer.unref();
    });
  }
}
