import { Injectable } from '@nestjs/common';
import { BatchedCounter } from '../common/batched-counter.js';
import { ApiKeyStore, type OutcomeCounts } from './api-key-store.js';

/**
 * What a request with an API key was finally decided, one per request: admitted by every guard
 * (`valid`), or refused, for the key itself (by the verifier), its network, its budgets, the org's
 * meter or a missing scope. The order is the order of the counts in memory and of the columns.
 */
export const VERIFICATION_OUTCOMES = [
  'valid',
  'revoked',
  'expired',
  'disabled',
  'pending',
  'ip_refused',
  'rate_limited',
  'credits_exhausted',
  'usage_exceeded',
  'insufficient_scope',
] as const;
export type Outcome = (typeof VERIFICATION_OUTCOMES)[number];

const INDEX = Object.fromEntries(VERIFICATION_OUTCOMES.map((o, i) => [o, i])) as Record<Outcome, number>;
const HOUR_MS = 3_600_000;
/**
 * How long outcomes gather before one write. A write costs per key-hour, not per request, so a
 * longer wait makes it proportionally cheaper (measured: a batch of 1,000 busy keys is one
 * statement of tens of ms); counts in hourly buckets lose nothing by arriving seconds later.
 */
export const OUTCOME_FLUSH_MS = 10_000;

/** A literal, so the array holds small integers unboxed (a filled `new Array(n)` stays holey). */
const zeros = (): number[] => [0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

/**
 * Counts each key's verification outcomes per UTC hour in memory and writes them behind the
 * responses (BatchedCounter: one upsert every OUTCOME_FLUSH_MS, adding to the stored counts). On the request
 * path a count is a Map lookup by key id in the current hour and an increment in a ten-slot
 * array: no string is built, nothing is awaited.
 */
@Injectable()
export class VerificationOutcomeRecorder extends BatchedCounter<OutcomeCounts> {
  /** Hour start (ms) → key id → counts, in VERIFICATION_OUTCOMES order. */
  private pending = new Map<number, Map<string, number[]>>();
  /** The hour of the last count and its keys' counts (looked up once an hour, not per request). */
  private hour = new Map<string, number[]>();
  private hourStart = 0;
  private hourEnd = 0;

  constructor(private readonly keys: ApiKeyStore) {
    super('VerificationOutcomeRecorder', (n) => `the verification outcomes of ${n} key-hour(s)`, OUTCOME_FLUSH_MS);
  }

  /** Counts one request of `keyId` decided as `outcome` at `at` (ms since the epoch). */
  count(keyId: string, outcome: Outcome, at: number): void {
    if (at < this.hourStart || at >= this.hourEnd) this.enter(at);
    let counts = this.hour.get(keyId);
    if (counts === undefined) {
      this.hour.set(keyId, (counts = zeros()));
      this.grew(1);
    }
    counts[INDEX[outcome]]++;
  }

  private enter(at: number): void {
    this.hourStart = at - (at % HOUR_MS);
    this.hourEnd = this.hourStart + HOUR_MS;
    let keys = this.pending.get(this.hourStart);
    if (!keys) this.pending.set(this.hourStart, (keys = new Map<string, number[]>()));
    this.hour = keys;
  }

  protected take(): OutcomeCounts[] {
    const rows: OutcomeCounts[] = [];
    for (const [start, keys] of this.pending) {
      const hour = new Date(start);
      for (const [keyId, counts] of keys) rows.push({ keyId, hour, counts });
    }
    this.pending = new Map();
    // The next count looks its hour up again, in the new map.
    this.hourStart = this.hourEnd = 0;
    return rows;
  }

  protected write(rows: OutcomeCounts[]): Promise<void> {
    return this.keys.recordOutcomes(rows);
  }
}
