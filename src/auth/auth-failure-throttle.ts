import { createHash } from 'node:crypto';
import { isIPv6 } from 'node:net';
import { Injectable, Logger, Optional } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import {
  RateLimiterMemory,
  RateLimiterPostgres,
  RateLimiterRes,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import type { DataSource } from 'typeorm';
import { Settings } from '../settings/settings.js';

const WINDOW_MS = 60_000;
/** Store entries outlive their window a little; expiry there is only garbage collection (windows follow the clock). */
const STORE_TTL_SECONDS = 120;
/** How long a credential that verified from an address stays welcome there while the address is throttled. */
export const TRUSTED_CREDENTIAL_MS = 15 * 60_000;
const MAX_TRUSTED = 50_000;
export const AUTH_FAILURE_TABLE = 'auth_failure_counts';

/** What the guard holds while a request authenticates: its reservation, settled once the outcome is known. */
export interface Admission {
  /** Seconds the address must wait (429), or 0 when the request may authenticate. */
  readonly retryAfter: number;
  /** The credential failed (401): the reservation stays counted, and the count is shared. */
  failed(): void;
  /** The credential verified: the reservation is given back, and the credential is trusted here for a while. */
  succeeded(): void;
  /** Neither (e.g. the database was down): the reservation is given back. */
  released(): void;
}

/** The admission of every request when the throttle is off (AUTH_FAILURE_LIMIT=0). */
export const OPEN: Admission = { retryAfter: 0, failed() {}, succeeded() {}, released() {} };

/**
 * Failed authentications per client address in one-minute windows of the service's clock; an
 * IPv6 client is counted by its /64, an IPv4-mapped address as its IPv4 address.
 *
 * - **Counted before any await.** Every request reserves a failure as it arrives (an in-memory
 *   `RateLimiterMemory` counts synchronously); a success gives it back. So N concurrent bad
 *   tokens from one address let at most the limit through to verification.
 * - **Shared by the instances.** A failure is also counted in PostgreSQL (`RateLimiterPostgres`,
 *   table auth_failure_counts), written behind the 401; the first request of an address in a
 *   window reads the shared count. Once the shared count reaches the limit the address is blocked
 *   in memory: a flood costs no database write per request. If the database cannot be reached,
 *   an in-memory insurance limiter counts instead.
 * - **A NAT does not lock out its office.** A credential that verified from an address in the
 *   last 15 minutes keeps being verified while that address is throttled.
 */
@Injectable()
export class AuthFailureThrottle {
  private readonly logger = new Logger('AuthFailureThrottle');
  private readonly front: RateLimiterMemory | null = null;
  private readonly shared: RateLimiterAbstract | null = null;
  /** `${unit} ${token digest}` -> clock time until which that credential is welcome from that unit. */
  private readonly trusted = new Map<string, number>();

  constructor(
    private readonly settings: Settings,
    @Optional() @InjectDataSource() db?: DataSource,
  ) {
    const limit = settings.authFailureLimit;
    if (limit <= 0) return;
    // One point above the limit lets "limit" failures through and refuses the next reservation.
    this.front = new RateLimiterMemory({ keyPrefix: 'auth_fail_front', points: limit, duration: STORE_TTL_SECONDS });
    if (db) {
      this.shared = new RateLimiterPostgres({
        storeClient: db,
        storeType: 'typeorm',
        tableName: AUTH_FAILURE_TABLE,
        tableCreated: true, // by the migration
        keyPrefix: 'auth_fail',
        points: limit,
        duration: STORE_TTL_SECONDS,
        inMemoryBlockOnConsumed: limit,
        insuranceLimiter: new RateLimiterMemory({
          keyPrefix: 'auth_fail_insurance',
          points: limit,
          duration: STORE_TTL_SECONDS,
        }),
      });
    }
  }

  /** False when AUTH_FAILURE_LIMIT is 0: every admission is OPEN, and callers may skip asking. */
  get active(): boolean {
    return this.front !== null;
  }

  /**
   * Takes a reservation for a request from `address` carrying `token` (null: none). The count is
   * taken synchronously, before this returns its promise: callers may await it safely.
   */
  admit(address: string, token: string | null): Promise<Admission> {
    if (!this.front) return Promise.resolve(OPEN);
    const unit = throttledUnit(address);
    const now = this.settings.clock.now().getTime();
    const window = Math.floor(now / WINDOW_MS);
    const key = `${unit}@${window}`;
    const retryAfter = Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - now) / 1000));
    const digest = token === null ? null : createHash('sha256').update(token).digest('base64url');
    const trustedKey = digest === null ? null : `${unit} ${digest}`;
    // A credential that verified from here recently is not a guess: no reservation, and it passes a throttle.
    const until = trustedKey === null ? undefined : this.trusted.get(trustedKey);
    if (until !== undefined && until > now) return Promise.resolve(this.admission(key, trustedKey, false));
    const reservation = this.front.consume(key); // counts now, synchronously
    return reservation.then(
      async (res) => {
        if (res.consumedPoints === 1 && this.shared && (await this.sharedFull(key))) {
          await this.front!.penalty(key, this.settings.authFailureLimit);
          return { ...OPEN, retryAfter };
        }
        return this.admission(key, trustedKey, true);
      },
      (rejection: unknown) => {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        return { ...OPEN, retryAfter };
      },
    );
  }

  private admission(key: string, trustedKey: string | null, reserved: boolean): Admission {
    return {
      retryAfter: 0,
      failed: () => {
        if (!reserved) void this.front!.penalty(key);
        this.shareFailure(key);
      },
      succeeded: () => {
        if (reserved) void this.front!.reward(key);
        if (trustedKey !== null) this.trust(trustedKey);
      },
      released: () => {
        if (reserved) void this.front!.reward(key);
      },
    };
  }

  private trust(trustedKey: string): void {
    this.trusted.delete(trustedKey); // re-insert: the Map's order is then oldest use first
    if (this.trusted.size >= MAX_TRUSTED) {
      const oldest = this.trusted.keys().next().value;
      if (oldest !== undefined) this.trusted.delete(oldest);
    }
    this.trusted.set(trustedKey, this.settings.clock.now().getTime() + TRUSTED_CREDENTIAL_MS);
  }

  /** Counts a failure in the shared store, behind the response; once over the limit, blocks the key here too. */
  private shareFailure(key: string): void {
    if (!this.shared) return;
    this.shared.consume(key).catch(async (rejection: unknown) => {
      if (rejection instanceof RateLimiterRes) {
        await this.front!.penalty(key, this.settings.authFailureLimit);
      } else {
        this.logger.warn(
          `could not count a failed authentication in the shared store: ${(rejection as Error).message}`,
        );
      }
    });
  }

  /** Whether the instances together have used up this window's failures (read once per address and window). */
  private async sharedFull(key: string): Promise<boolean> {
    try {
      const res = await this.shared!.get(key);
      return res !== null && res.consumedPoints >= this.settings.authFailureLimit;
    } catch {
      return false; // the shared store is unreachable: the in-memory count still holds
    }
  }
}

/** The unit an address is throttled as: an IPv4 address, or the /64 network of an IPv6 address. */
export function throttledUnit(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1];
  if (!isIPv6(address)) return address;
  const bare = address.split('%')[0].toLowerCase();
  const groups = (part: string) => (part ? part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : []);
  const [left, right] = bare.includes('::') ? bare.split('::') : [bare, undefined];
  const head = groups(left);
  const tail = right === undefined ? [] : groups(right);
  const full =
    right === undefined ? head : [...head, ...Array<string>(8 - head.length - tail.length).fill('0'), ...tail];
  return `${full
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
