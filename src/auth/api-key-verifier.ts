import { Injectable } from '@nestjs/common';
import { timingSafeEqual, type KeyObject } from 'node:crypto';
import { ApiKeyStore, type KeyVerificationRow } from './api-key-store.js';
import { utcDay } from '../common/clock.js';
import { endOfTurnLoader } from '../common/end-of-turn-loader.js';
import { attachUsageSnapshot } from './usage-snapshot.js';
import { Settings } from '../settings/settings.js';
import { memberKey, OrgDirectory } from '../directory/org-directory.js';
import { hashApiKey, hashesEqual, KEY_LENGTH, KEY_PREFIX, parseApiKey } from './api-key-format.js';
import { markPendingUse } from './last-use.guard.js';
import { LastUsedWriter } from './last-used-writer.js';
import { AuthMetrics } from './auth-metrics.js';
import type { Principal } from './principal.js';
import { VerificationCache, type CachedKeyRow } from './verification-cache.js';
import { VerificationOutcomeRecorder, type Outcome } from './verification-outcome-recorder.js';

/** Compared against when a lookup id has no row: an HMAC-SHA-256's length, matching no key. */
const NO_SUCH_KEY_HASH = Buffer.alloc(32);
/** Compared against on the cache's fast path when the lookup id has no verified key cached: no key is all zero bytes. */
const NO_SUCH_KEY = Buffer.alloc(KEY_LENGTH);
const LOOKUP_START = KEY_PREFIX.length;
const LOOKUP_END = LOOKUP_START + 12;

type VerifiedRow = KeyVerificationRow & { day: string };
/** A presented key as the database is asked for it: its lookup id and its keyed hash. */
type Presented = { lookup: string; hash: Buffer };

/**
 * The presented key's bytes for the cache's compare, written into one buffer instead of a new
 * one per request (synchronous use only). One byte longer than a key: a token of KEY_LENGTH
 * characters with a non-ASCII one either writes a byte count other than KEY_LENGTH or writes a
 * byte of 0x80 or more, and a verified key is ASCII, so it never compares equal.
 */
const PRESENTED = Buffer.alloc(KEY_LENGTH + 1);
const PRESENTED_KEY = PRESENTED.subarray(0, KEY_LENGTH);

/**
 * Verifies API keys: from the verification cache while this instance holds its lease (a change
 * anywhere is applied here before the writer's request answers), else against the database.
 * Database verifications that arrive in the same event-loop turn share one `WHERE lookup =
 * ANY($1)` statement (`endOfTurnLoader`); it keeps no cache, so a request that arrives while a
 * batch is in flight goes into the next one and no answer predates its request.
 *
 * A wrong secret costs what a missing lookup id costs, step for step: the fast path's comparison
 * (against a stand-in when nothing is cached), the keyed hash and its comparison (against a
 * stand-in hash when there is no row), and a database read that finds no row (the statement
 * matches the hash too, so a real lookup id with a wrong secret sends back nothing to decode). A
 * row is cached only once a presented key has matched it, and a cached row that the presented
 * key does not match is read again (as a miss would be), so neither the answer's time nor the
 * cache tells whether a lookup id exists.
 */
@Injectable()
export class ApiKeyVerifier {
  private readonly rows = endOfTurnLoader<Presented, VerifiedRow | undefined>((presented) => this.loadRows(presented));
  private readonly ownDirectory: boolean;
  /** Only with the built-in directory: a host's directory changes where no trigger sees them. */
  private readonly cached: boolean;

  constructor(
    private readonly keys: ApiKeyStore,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
    private readonly metrics: AuthMetrics,
    private readonly cache: VerificationCache,
    private readonly outcomes: VerificationOutcomeRecorder,
    private readonly lastUsed: LastUsedWriter,
  ) {
    // With the built-in directory, owner and membership come in the same statement as the key.
    this.ownDirectory = directory.ownTables;
    this.cached = this.ownDirectory && cache.enabled;
  }

  /**
   * The principal for a key, or null for any kind of invalid key. Rejects only when the database
   * fails. A cache hit answers synchronously (a value, not a promise): the strategy reports it to
   * passport in the same turn, without the microtasks a promise costs on every cached request.
   */
  verify(token: string): Principal | null | Promise<Principal | null> {
    const secret = this.settings.apiKeySecret;
    // The cache's fast path: these exact bytes matched this row's hash before, so neither the
    // format and checksum nor the keyed hash need computing again. Anything else (another
    // secret under a cached lookup id, a malformed key) takes the full path below.
    if (this.cached && secret && token.length === KEY_LENGTH) {
      const hit = this.cache.key(token.slice(LOOKUP_START, LOOKUP_END));
      // Compared whether or not a verified key is cached under the lookup id (a stand-in when not).
      const known = hit?.verified?.length === KEY_LENGTH ? hit.verified : NO_SUCH_KEY;
      const whole = PRESENTED.write(token, 'utf8') === KEY_LENGTH;
      if (timingSafeEqual(PRESENTED_KEY, known) && whole && known !== NO_SUCH_KEY) return this.accept(hit!, true);
      return this.verifyFully(token, secret, true, hit);
    }
    return this.verifyFully(token, secret, false, undefined);
  }

  /** `consulted`: the cache was already asked for this token's lookup id (and answered `hit`). */
  private async verifyFully(
    token: string,
    secret: KeyObject | null,
    consulted: boolean,
    hit: CachedKeyRow | undefined,
  ): Promise<Principal | null> {
    const lookup = parseApiKey(token);
    if (!lookup) return this.refuse('malformed');
    if (!secret) return this.refuse('not_configured');
    const presented = hashApiKey(secret, token);
    const cached = consulted ? hit : this.cached ? this.cache.key(lookup) : undefined;
    // Compared whether or not the lookup id is cached (against the stand-in hash when not).
    if (hashesEqual(cached ? expectedHash(cached, lookup) : NO_SUCH_KEY_HASH, presented) && cached)
      return this.accept(cached, remember(cached, lookup, token));
    // A miss, or a cached row this key does not match: the database, which answers only a row
    // this key's hash matches, and whose row is cached only then. The hash is compared again
    // whether or not a row came (against the stand-in when none did), so the time does not tell
    // which ids exist.
    const stamp = this.cached ? this.cache.stamp() : null;
    const row = await this.rows.load({ lookup, hash: presented });
    if (!hashesEqual(row ? expectedHash(row, lookup) : NO_SUCH_KEY_HASH, presented) || !row)
      return this.refuse('unknown');
    // A pending key is never cached: its approval changes nothing the cache hears of, and it verifies only from then on.
    const entry =
      this.cached && !row.pending
        ? this.cache.putKey(lookup, row, stamp, this.settings.clock.now().getTime())
        : undefined;
    return this.accept(row, entry ? remember(entry, lookup, token) : row.lookup === lookup);
  }

  /**
   * The key's own checks, in the order of its state (key-state.ts: revoked, then pending, expired,
   * disabled), each refusal counted as the key's verification outcome, from the cache or not.
   */
  private accept(row: CachedKeyRow | VerifiedRow, current: boolean): Principal | null {
    const now = this.settings.clock.now();
    const t = now.getTime();
    // The secret a rotation replaced verifies until its grace period ends; after it, it is no
    // longer the key's (the database answers no row for it), so no outcome of the key is counted.
    if (!current && (!row.previousExpiresAt || row.previousExpiresAt.getTime() <= t)) return this.refuse('expired');
    if (row.revokedAt) return this.refuseKey(row.id, 'revoked', t);
    if (row.pending) return this.refuseKey(row.id, 'pending', t);
    if (row.expiresAt && row.expiresAt.getTime() <= t) return this.refuseKey(row.id, 'expired', t);
    if (row.enabled === false) return this.refuseKey(row.id, 'disabled', t);
    if (!row.role || !row.email || !row.plan) return this.refuse('not_member');
    this.metrics.verification('ok');
    const principal: Principal = {
      kind: row.service ? 'service' : 'api_key',
      keyId: row.id,
      userId: row.userId,
      email: row.email,
      orgId: row.orgId,
      orgRole: row.role,
      orgMemberCount: row.memberCount,
      plan: row.plan,
      scopes: this.settings.scopes.effective(row.scopes, row.role),
      // Always present, undefined when the key has none: every key's principal has one shape, so
      // the guards that read it stay monomorphic whether or not a key carries limits or metadata.
      metadata: row.metadata || undefined,
      limits: row.limits || undefined,
    };
    // Recorded as a use only once every guard has admitted the request (LastUseGuard); a use the
    // one-minute window would drop anyway is not held at all (most requests of a busy key).
    if (this.lastUsed.due(row.id, row.lastUsedAt, t)) markPendingUse(principal, row.id, row.lastUsedAt, now);
    // Meters are never cached: a cached answer leaves GET /usage to read them.
    if ('usage' in row) attachUsageSnapshot(principal, row.day, row.usage);
    return principal;
  }

  private refuse(outcome: Parameters<AuthMetrics['verification']>[0]): null {
    this.metrics.verification(outcome);
    return null;
  }

  /** A refusal for the key's own state: counted as the key's outcome, beside the metric. */
  private refuseKey(keyId: string, outcome: Outcome & Parameters<AuthMetrics['verification']>[0], at: number): null {
    this.outcomes.count(keyId, outcome, at);
    return this.refuse(outcome);
  }

  /** One statement for a batch of presented keys; answers in the batch's order, undefined for no key. */
  private async loadRows(presented: readonly Presented[]): Promise<Array<VerifiedRow | undefined>> {
    const day = utcDay(this.settings.clock.now());
    const found = new Map<string, VerifiedRow>();
    const unique = [...new Set(presented.map((p) => p.lookup))];
    const hashes = presented.map((p) => p.hash);
    const rows = this.ownDirectory
      ? await this.keys.findForVerification(unique, hashes, true, day)
      : await this.withHostDirectory(unique, hashes, day);
    for (const r of rows) {
      // Host code gets these on its principal; frozen, a handler cannot change them for later requests.
      deepFreeze(r.metadata);
      deepFreeze(r.limits);
      const row = { ...r, day };
      found.set(r.lookup, row);
      // A rotated key in its grace period answers to its previous lookup too.
      if (r.previousLookup) found.set(r.previousLookup, row);
    }
    return presented.map((p) => found.get(p.lookup));
  }

  /** The keys from our table, their owners' standing from the host's directory. */
  private async withHostDirectory(lookups: string[], hashes: Buffer[], day: string): Promise<KeyVerificationRow[]> {
    const rows = await this.keys.findForVerification(lookups, hashes, false, day);
    const live = rows.filter((r) => !r.revokedAt && !r.pending);
    const contexts = await this.directory.memberContexts(live.map((r) => ({ userId: r.userId, orgId: r.orgId })));
    return rows.map((r) => {
      const c = contexts.get(memberKey(r.userId, r.orgId));
      return c ? { ...r, email: c.email, role: c.role, plan: c.plan, memberCount: c.memberCount } : r;
    });
  }
}

/**
 * Freezes a row's metadata or limits and everything in them, once per database read: every
 * principal built from the row (and the cached row itself) shares these objects, so none may
 * be changed in place. A function (a key's network matcher) is frozen itself, not entered.
 */
function deepFreeze(value: unknown): void {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function') || Object.isFrozen(value)) return;
  Object.freeze(value);
  if (typeof value === 'object') for (const child of Object.values(value)) deepFreeze(child);
}

/** The hash a key presented under `lookup` must match: the row's current one, or the one a rotation replaced. */
function expectedHash(row: CachedKeyRow, lookup: string): Buffer {
  return row.lookup === lookup ? row.keyHash : (row.previousKeyHash ?? NO_SUCH_KEY_HASH);
}

/**
 * For a row the key matched: whether `lookup` is its current one, and if so the key's bytes are
 * kept for the fast path (a replaced secret is checked against its grace period each time).
 */
function remember(entry: CachedKeyRow, lookup: string, token: string): boolean {
  const current = entry.lookup === lookup;
  if (current) entry.verified = Buffer.from(token, 'utf8');
  return current;
}
